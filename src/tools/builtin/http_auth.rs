//! `auth` of `http_get` and `http_request`: the name of a `[secrets]` entry whose value Butler
//! adds to the request as a header, after the permission check, only for the secret's own
//! hosts. The model offers the name; it never sees, sends or gets back the value (a response
//! echoing it is redacted by the caller with the same vault).
//!
//! This must never put a secret's value into a schema, a summary, an error or a result.

use crate::secrets::Vault;
use crate::tools::ToolError;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{json, Value};

/// The `auth` property of the tools' schema: the usable names, `None` without any.
pub(super) fn auth_property(vault: &Vault) -> Option<Value> {
    let names = vault.http_names();
    (!names.is_empty()).then(|| {
        json!({
            "type": "string",
            "enum": names,
            "description": "a named credential Butler adds to the request (you never see its value); only for \
                            the hosts it belongs to"
        })
    })
}

/// `schema` with the `auth` property when there is one.
pub(super) fn with_auth(mut schema: Value, auth: &Option<Value>) -> Value {
    if let (Some(auth), Some(props)) = (auth, schema.get_mut("properties").and_then(Value::as_object_mut)) {
        props.insert("auth".into(), auth.clone());
    }
    schema
}

/// ` with the secret `NAME`` for a call's summary, when it names one.
pub(super) fn described(args: &Value) -> String {
    match args.get("auth").and_then(Value::as_str) {
        Some(name) => format!(" with the secret `{name}`"),
        None => String::new(),
    }
}

/// Adds the header of secret `name` for a request to `host` (a sensitive header: never
/// logged by the client).
pub(super) fn apply(vault: &Vault, name: &str, host: &str, headers: &mut HeaderMap) -> Result<(), ToolError> {
    let (header, value) = vault.header_for(name, host).map_err(|e| ToolError::Failed(e.to_string()))?;
    let header = HeaderName::from_bytes(header.as_bytes())
        .map_err(|_| ToolError::Failed(format!("secrets.{name}.header is not a header name")))?;
    let mut value = HeaderValue::from_str(&value)
        .map_err(|_| ToolError::Failed(format!("the secret `{name}` is not valid in an HTTP header")))?;
    value.set_sensitive(true);
    headers.insert(header, value);
    Ok(())
}

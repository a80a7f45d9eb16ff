//! Checks a tool call's arguments against the tool's JSON Schema before the tool runs: an
//! object, required keys present, declared property types right, no unknown keys when the
//! schema says `additionalProperties: false`. This is deliberately the small subset of JSON
//! Schema that tool schemas use; it must never accept something the tool then panics on.

use serde_json::Value;

fn type_ok(expected: &str, v: &Value) -> bool {
    match expected {
        "string" => v.is_string(),
        "integer" => v.as_i64().is_some() || v.as_u64().is_some(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => true,
    }
}

/// `Ok(())` when `args` fits `schema`; otherwise a message the model can act on.
pub fn validate_args(schema: &Value, args: &Value) -> Result<(), String> {
    let Some(obj) = args.as_object() else {
        return Err(format!("arguments must be a JSON object, got {args}"));
    };
    let props = schema.get("properties").and_then(Value::as_object);
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for key in required.iter().filter_map(Value::as_str) {
            if !obj.contains_key(key) {
                return Err(format!("missing required argument `{key}`"));
            }
        }
    }
    for (key, value) in obj {
        match props.and_then(|p| p.get(key)) {
            Some(prop) => {
                let types: Vec<&str> = match prop.get("type") {
                    Some(Value::String(t)) => vec![t.as_str()],
                    Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
                    _ => vec![],
                };
                if !types.is_empty() && !types.iter().any(|t| type_ok(t, value)) {
                    return Err(format!("argument `{key}` must be of type {}, got {value}", types.join(" or ")));
                }
                if let Some(allowed) = prop.get("enum").and_then(Value::as_array) {
                    if !allowed.contains(value) {
                        return Err(format!("argument `{key}` must be one of {}", Value::Array(allowed.clone())));
                    }
                }
            }
            None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                return Err(format!("unknown argument `{key}`"));
            }
            None => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn table() {
        let schema = json!({
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "n": {"type": "integer"},
                "mode": {"type": "string", "enum": ["a", "b"]}
            },
            "required": ["text"],
            "additionalProperties": false
        });
        let cases = [
            (json!({"text": "hi"}), None),
            (json!({"text": "hi", "n": 3, "mode": "a"}), None),
            (json!([1]), Some("must be a JSON object")),
            (json!({}), Some("missing required argument `text`")),
            (json!({"text": 5}), Some("`text` must be of type string")),
            (json!({"text": "x", "n": 1.5}), Some("`n` must be of type integer")),
            (json!({"text": "x", "mode": "c"}), Some("`mode` must be one of")),
            (json!({"text": "x", "extra": 1}), Some("unknown argument `extra`")),
        ];
        for (args, want) in cases {
            let got = validate_args(&schema, &args);
            match (got, want) {
                (Ok(()), None) => {}
                (Err(e), Some(w)) => assert!(e.contains(w), "{args}: {e}"),
                (g, w) => panic!("{args}: got {g:?}, want {w:?}"),
            }
        }
    }
}

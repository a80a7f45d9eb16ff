//! Building the client and logging in: the SDK's SQLite state and crypto store under
//! `store_path`, and the session (user, device, access token) in `session.json` beside it
//! (mode 0600), so Butler keeps one device, its keys and its encrypted rooms across restarts
//! instead of logging in anew each time. The store is locked while a process uses it: two
//! processes on one device would corrupt its keys (replicas each need their own `store_path`).
//! `check` is `butler doctor`'s: the homeserver's versions and the login.
//!
//! It must never log or return the password or an access token.

use crate::{url_ok, ConnectError, Login, Settings};
use matrix_sdk::authentication::matrix::MatrixSession;
use matrix_sdk::ruma::{OwnedDeviceId, OwnedUserId};
use matrix_sdk::{Client, SessionMeta, SessionTokens};
use std::path::Path;

const SESSION_FILE: &str = "session.json";
/// The device name people see in their clients' session lists.
const DEVICE_NAME: &str = "Butler";

fn store_err(path: &Path, why: impl std::fmt::Display) -> ConnectError {
    ConnectError::Store { path: path.display().to_string(), why: why.to_string() }
}

fn user_id(settings: &Settings) -> Result<OwnedUserId, ConnectError> {
    OwnedUserId::try_from(settings.user_id.as_str()).map_err(|_| ConnectError::Refused {
        user: settings.user_id.clone(),
        why: "not a Matrix user id (@name:server)".into(),
    })
}

fn unreachable(settings: &Settings, e: impl std::fmt::Display) -> ConnectError {
    ConnectError::Unreachable { url: settings.homeserver.clone(), error: e.to_string() }
}

/// The session saved by an earlier login, if it is this user's.
fn saved_session(settings: &Settings) -> Result<Option<MatrixSession>, ConnectError> {
    let path = settings.store_path.join(SESSION_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(store_err(&path, e.kind())),
    };
    let session: MatrixSession = serde_json::from_str(&text).map_err(|_| store_err(&path, "not a saved session"))?;
    if session.meta.user_id.as_str() != settings.user_id {
        return Err(ConnectError::StoreMismatch {
            path: settings.store_path.display().to_string(),
            why: format!("it was made for {}", session.meta.user_id),
        });
    }
    Ok(Some(session))
}

fn save_session(settings: &Settings, session: &MatrixSession) -> Result<(), ConnectError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = settings.store_path.join(SESSION_FILE);
    let tmp = settings.store_path.join(".session.json.tmp");
    let json = serde_json::to_vec(session).map_err(|e| store_err(&path, e))?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| store_err(&tmp, e.kind()))?;
    f.write_all(&json).and_then(|_| f.sync_all()).map_err(|e| store_err(&tmp, e.kind()))?;
    std::fs::rename(&tmp, &path).map_err(|e| store_err(&path, e.kind()))
}

/// A logged-in client and the lock on its store.
pub(crate) struct Connected {
    pub client: Client,
    _lock: std::fs::File,
}

/// Takes the store's lock, or says which folder another process holds.
fn lock(dir: &Path) -> Result<std::fs::File, ConnectError> {
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(|e| store_err(dir, e.kind()))?;
    }
    let path = dir.join(".lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| store_err(&path, e.kind()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(ConnectError::InUse { path: dir.display().to_string() }),
        Err(std::fs::TryLockError::Error(e)) => Err(store_err(&path, e.kind())),
    }
}

/// A client on the store, logged in (a saved session, the token, or a password login).
pub(crate) async fn connect(settings: &Settings) -> Result<Connected, ConnectError> {
    url_ok(&settings.homeserver)?;
    let user = user_id(settings)?;
    let dir = &settings.store_path;
    let lock = lock(dir)?;
    let client = Client::builder()
        .homeserver_url(&settings.homeserver)
        .sqlite_store(dir, None)
        .build()
        .await
        .map_err(|e| store_err(dir, e))?;
    let session = match (saved_session(settings)?, &settings.login) {
        (Some(saved), _) => saved,
        (None, Login::AccessToken(token)) => {
            let device = settings.device_id.clone().ok_or_else(|| ConnectError::Refused {
                user: settings.user_id.clone(),
                why: "an access token needs the device_id it was made for".into(),
            })?;
            MatrixSession {
                meta: SessionMeta { user_id: user.clone(), device_id: OwnedDeviceId::from(device.as_str()) },
                tokens: SessionTokens { access_token: token.clone(), refresh_token: None },
            }
        }
        (None, Login::Password(password)) => {
            let mut login =
                client.matrix_auth().login_username(&user, password).initial_device_display_name(DEVICE_NAME);
            if let Some(device) = &settings.device_id {
                login = login.device_id(device);
            }
            login.send().await.map_err(|e| login_error(settings, e))?;
            let session =
                client.matrix_auth().session().ok_or_else(|| ConnectError::Other("no session after login".into()))?;
            save_session(settings, &session)?;
            tracing::info!(channel = "matrix", device = %session.meta.device_id, "logged in; session saved");
            return Ok(Connected { client, _lock: lock });
        }
    };
    client.restore_session(session).await.map_err(|e| {
        let why = e.to_string();
        if why.contains("mismatch") || why.contains("account") {
            ConnectError::StoreMismatch { path: dir.display().to_string(), why }
        } else {
            store_err(dir, why)
        }
    })?;
    // A token the homeserver no longer knows shows here rather than at the first sync.
    client.whoami().await.map_err(|e| login_error(settings, e.into()))?;
    Ok(Connected { client, _lock: lock })
}

fn login_error(settings: &Settings, e: matrix_sdk::Error) -> ConnectError {
    let refused = match &e {
        matrix_sdk::Error::Http(http) => {
            http.as_client_api_error().filter(|api| matches!(api.status_code.as_u16(), 401 | 403))
        }
        _ => None,
    };
    match refused {
        Some(api) => ConnectError::Refused {
            user: settings.user_id.clone(),
            why: api.error_kind().map(|k| k.errcode().to_string()).unwrap_or_else(|| api.status_code.to_string()),
        },
        None => unreachable(settings, crate::errors::sdk(e)),
    }
}

/// `butler doctor`: the homeserver's spec versions, then the login (with the saved session if
/// there is one). The versions it speaks, and the device Butler is.
pub async fn check(settings: &Settings) -> Result<String, ConnectError> {
    url_ok(&settings.homeserver)?;
    let probe = Client::builder()
        .homeserver_url(&settings.homeserver)
        .build()
        .await
        .map_err(|e| ConnectError::Other(e.to_string()))?;
    let versions = probe.server_versions().await.map_err(|e| unreachable(settings, e))?;
    let newest = versions.iter().last().map(|v| format!("{v:?}")).unwrap_or_else(|| "none".into());
    let connected = match connect(settings).await {
        Ok(connected) => connected,
        // A running Butler holds the store: it is logged in, and its login is its own to show.
        Err(ConnectError::InUse { .. }) => {
            return Ok(format!(
                "spec {newest}; the store is in use by a running Butler logged in as {}",
                settings.user_id
            ))
        }
        Err(e) => return Err(e),
    };
    let device = connected.client.device_id().map(|d| d.to_string()).unwrap_or_default();
    Ok(format!("spec {newest}; logged in as {} (device {device})", settings.user_id))
}

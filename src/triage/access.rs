//! Who may talk to Butler. Closed by default: configured owners and `allow` entries only
//! (plus the local identities of `butler chat` and the tokenless local web chat). Everyone else
//! gets one short refusal per hour and nothing reaches the agent.

use crate::config::{AccessConfig, AccessPolicy};
use crate::store::{NewUser, Store, StoreError, UserRole, UserRow};
use butler_channel::{Actor, Identity};
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The user id shared by the local identities (`cli:local`, the local web user, `web:owner`).
pub const LOCAL_USER: &str = "local";
const REFUSAL_EVERY: Duration = Duration::from_secs(3600);

pub struct Access {
    policy: AccessPolicy,
    owners: HashSet<Identity>,
    allow: HashSet<Identity>,
    /// Identities that are the operator on this machine: one user, `local`.
    local: HashSet<Identity>,
    timezone: String,
    users: Mutex<HashMap<Identity, UserRow>>,
    refused: Mutex<HashMap<Identity, Instant>>,
}

impl Access {
    /// `local` lists the identities that stand for the operator (always owners).
    pub fn new(cfg: &AccessConfig, local: impl IntoIterator<Item = Identity>, timezone: &str) -> Self {
        let local: HashSet<Identity> = local.into_iter().collect();
        let mut owners: HashSet<Identity> = cfg.owners.iter().cloned().collect();
        owners.extend(local.iter().cloned());
        Self {
            policy: cfg.policy,
            owners,
            allow: cfg.allow.iter().cloned().collect(),
            local,
            timezone: timezone.to_string(),
            users: Mutex::new(HashMap::new()),
            refused: Mutex::new(HashMap::new()),
        }
    }

    /// The role config gives an identity, if any.
    pub fn configured_role(&self, id: &Identity) -> Option<UserRole> {
        if self.owners.contains(id) {
            Some(UserRole::Owner)
        } else if self.allow.contains(id) {
            Some(UserRole::Member)
        } else if self.policy == AccessPolicy::Open {
            Some(UserRole::Guest)
        } else {
            None
        }
    }

    /// The user behind `actor`, or why not: `Err(Some(text))` is a refusal to send,
    /// `Err(None)` means stay silent (refused recently).
    pub async fn resolve(
        &self,
        store: &dyn Store,
        actor: &Actor,
    ) -> Result<Result<UserRow, Option<String>>, StoreError> {
        let id = &actor.identity;
        if let Some(u) = self.users.lock().unwrap_or_else(|p| p.into_inner()).get(id) {
            return Ok(Ok(u.clone()));
        }
        let Some(role) = self.configured_role(id) else {
            return Ok(Err(self.refusal(id)));
        };
        let new = NewUser {
            id: if self.local.contains(id) { LOCAL_USER.to_string() } else { uuid::Uuid::new_v4().to_string() },
            display_name: actor.display_name.clone(),
            role,
            timezone: self.timezone.clone(),
        };
        let mut user = store.user_ensure(id, &new).await?;
        user.role = role;
        self.users.lock().unwrap_or_else(|p| p.into_inner()).insert(id.clone(), user.clone());
        Ok(Ok(user))
    }

    fn refusal(&self, id: &Identity) -> Option<String> {
        let mut refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if refused.get(id).is_some_and(|at| now.duration_since(*at) < REFUSAL_EVERY) {
            return None;
        }
        refused.insert(id.clone(), now);
        Some(format!(
            "🔒 This Butler is private and does not know you yet (`{id}`). Ask its owner to add `{id}` to [access] allow."
        ))
    }
}

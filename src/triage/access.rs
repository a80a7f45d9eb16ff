//! Who may talk to Butler. Closed by default: configured owners and `allow` entries, users the
//! owner approved through pairing, identities linked to them, and the local operator (`cli:local`,
//! the tokenless local web page). Everyone else gets at most one short answer an hour (a pairing
//! code, or a refusal) and nothing reaches the agent.
//!
//! The counts behind "at most one answer an hour" and the lockout after wrong codes are kept
//! in the rate [`Gate`] (shared by the replicas with Redis, so a guesser gains nothing by
//! landing on another replica). The admission cache is this process's; a link or a pairing
//! approval drops the identity from it here and, through the cluster's bus, on every replica.
//!
//! This module must never let an identity through on a guess: codes are random, single use,
//! short-lived, and repeated wrong codes lock the sender out for a while.

use crate::cluster::{Cluster, Topic};
use crate::config::{AccessConfig, AccessPolicy, GroupConfig};
use crate::store::{
    now_ms, AccessStore, CodeKind, CodeRow, NewOutbox, NewUser, OutboxStore, StoreError, UserRole, UserRow, UserStore,
};
use butler_channel::limit::{Gate, Rate};
use butler_channel::{ConversationKind, ConversationRef, Identity, InboundEvent};
use rand::Rng;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The user id shared by the local identities (`cli:local`, the local web user, `web:owner`).
pub const LOCAL_USER: &str = "local";
/// How long a pairing code lives.
pub const PAIR_TTL: Duration = Duration::from_secs(3600);
/// How long a link code lives.
pub const LINK_TTL: Duration = Duration::from_secs(600);
/// How long the owner code `butler init` and `butler pair owner` print stays valid.
pub const OWNER_CODE_TTL: Duration = Duration::from_secs(7 * 24 * 3600);
/// Refusals (and pairing codes) per identity: at most one per this period.
const REFUSAL_EVERY: Duration = Duration::from_secs(3600);
/// Cached admissions are re-read after this long (links and role changes made elsewhere).
const CACHE_TTL: Duration = Duration::from_secs(60);
/// Wrong codes tolerated within `GUESS_WINDOW` before a lockout of `LOCKOUT`.
const MAX_WRONG_CODES: u32 = 5;
const GUESS_WINDOW: Duration = Duration::from_secs(600);
const LOCKOUT: Duration = Duration::from_secs(900);
/// Code alphabet: no 0/O, 1/I/L, so codes survive being read aloud or retyped.
const ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";

/// What to do with someone who wrote to Butler.
#[derive(Debug)]
pub enum Admission {
    /// Known and allowed.
    User(UserRow),
    /// Tell them this (a pairing code or a refusal); record it as `kind` ("pairing", "refused").
    Answer { text: String, kind: &'static str, reason: String },
    /// Told recently: stay silent (still recorded).
    Silent { reason: String },
}

pub struct Access {
    policy: AccessPolicy,
    owners: Vec<Identity>,
    allow: Vec<Identity>,
    /// Identities that are the operator on this machine: one user, `local`.
    local: Vec<Identity>,
    groups: Vec<GroupConfig>,
    timezone: String,
    users: Mutex<HashMap<Identity, (UserRow, Instant)>>,
    /// Refusals per identity, wrong codes and lockouts.
    gate: Gate,
    /// Where access changes are announced to the other replicas.
    bus: Option<Arc<Cluster>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A random code such as `K7QX-M2PD` (31^8, about 8.5e11 possibilities).
pub fn new_code() -> String {
    let mut rng = rand::rng();
    let mut s = String::with_capacity(9);
    for i in 0..8 {
        if i == 4 {
            s.push('-');
        }
        s.push(ALPHABET[rng.random_range(0..ALPHABET.len())] as char);
    }
    s
}

/// Normalizes what someone typed (`k7qx m2pd`, `K7QXM2PD`) to the stored form.
pub fn normalize_code(typed: &str) -> String {
    let raw: String = typed.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_uppercase();
    if raw.len() == 8 {
        format!("{}-{}", &raw[..4], &raw[4..])
    } else {
        raw
    }
}

impl Access {
    /// `local` lists the identities that stand for the operator (always owners).
    pub fn new(cfg: &AccessConfig, local: impl IntoIterator<Item = Identity>, timezone: &str) -> Self {
        let local: Vec<Identity> = local.into_iter().collect();
        let mut owners = cfg.owners.clone();
        owners.extend(local.iter().cloned());
        Self {
            policy: cfg.policy,
            owners,
            allow: cfg.allow.clone(),
            local,
            groups: cfg.groups.clone(),
            timezone: timezone.to_string(),
            users: Mutex::new(HashMap::new()),
            gate: Gate::local(),
            bus: None,
        }
    }

    /// Announces links and approvals on `cluster`'s bus, so other replicas drop the identity
    /// from their admission caches.
    pub fn with_bus(mut self, cluster: Arc<Cluster>) -> Self {
        self.bus = Some(cluster);
        self
    }

    /// Keeps refusals, wrong codes and lockouts in `gate` (the replicas' shared one).
    pub fn with_gate(mut self, gate: Gate) -> Self {
        self.gate = gate;
        self
    }

    /// The owners: the configured ones first, then the local operator's identities.
    pub fn owners(&self) -> &[Identity] {
        &self.owners
    }

    /// The role config gives an identity, if any.
    pub fn configured_role(&self, id: &Identity) -> Option<UserRole> {
        if self.owners.contains(id) {
            Some(UserRole::Owner)
        } else if self.allow.contains(id) {
            Some(UserRole::Member)
        } else {
            None
        }
    }

    /// The group settings for a conversation: an entry for its thread wins over one for the
    /// whole chat.
    pub fn group(&self, conversation: &ConversationRef) -> Option<&GroupConfig> {
        let chat = ConversationRef { thread: None, ..conversation.clone() };
        self.groups
            .iter()
            .find(|g| g.conversation == *conversation)
            .or_else(|| self.groups.iter().find(|g| g.conversation == chat))
    }

    /// Forgets what this process cached about `id` (another replica announced a change).
    pub fn invalidate(&self, id: &Identity) {
        lock(&self.users).remove(id);
    }

    /// Who `id` is changed (a link, an approval): forgotten here and, with several replicas,
    /// announced on the bus so each of them forgets it too.
    pub async fn changed(&self, id: &Identity) {
        self.invalidate(id);
        if let Some(bus) = self.bus.as_ref().filter(|b| b.shared()) {
            bus.publish(Topic::Access, &id.to_string()).await;
        }
    }

    /// The user behind `id` if that identity may use Butler; creates the user for identities
    /// the config allows (or anyone, under `policy = "open"`). Never answers anyone.
    pub async fn user_for(&self, store: &dyn UserStore, id: &Identity) -> Result<Option<UserRow>, StoreError> {
        if let Some((u, at)) = lock(&self.users).get(id) {
            if at.elapsed() < CACHE_TTL {
                return Ok(Some(u.clone()));
            }
        }
        let configured = self.configured_role(id);
        let stored = store.identity_user(id).await?;
        let user = match (configured, stored) {
            // Config decides at least the role; a stored role may be higher (an owner's link).
            (Some(role), Some(mut u)) => {
                u.role = u.role.max(role);
                Some(u)
            }
            (Some(role), None) => Some(self.create(store, id, None, role).await?),
            (None, Some(u)) if u.role >= UserRole::Member => Some(u),
            (None, Some(u)) if self.policy == AccessPolicy::Open => Some(u),
            (None, None) if self.policy == AccessPolicy::Open => {
                Some(self.create(store, id, None, UserRole::Guest).await?)
            }
            (None, _) => None,
        };
        if let Some(u) = &user {
            lock(&self.users).insert(id.clone(), (u.clone(), Instant::now()));
        }
        Ok(user)
    }

    async fn create(
        &self,
        store: &dyn UserStore,
        id: &Identity,
        name: Option<String>,
        role: UserRole,
    ) -> Result<UserRow, StoreError> {
        let new = NewUser {
            id: if self.local.contains(id) { LOCAL_USER.to_string() } else { uuid::Uuid::new_v4().to_string() },
            display_name: name,
            role,
            timezone: self.timezone.clone(),
        };
        let mut user = store.user_ensure(id, &new).await?;
        if user.role < role {
            store.user_set_role(&user.id, role).await?;
            user.role = role;
        }
        Ok(user)
    }

    /// Decides about the sender of `event`.
    pub async fn admit(
        &self,
        (users, codes): (&dyn UserStore, &dyn AccessStore),
        event: &InboundEvent,
    ) -> Result<Admission, StoreError> {
        let id = &event.actor.identity;
        if let Some(user) = self.user_for(users, id).await? {
            return Ok(Admission::User(user));
        }
        if self.policy == AccessPolicy::Pairing && event.kind == ConversationKind::Direct {
            return self.offer_pairing(codes, event).await;
        }
        let reason = format!("{id} is not allowed ({:?} policy)", self.policy).to_lowercase();
        if !self.may_refuse(id).await {
            return Ok(Admission::Silent { reason });
        }
        let text = match (self.policy, event.kind) {
            (AccessPolicy::Pairing, _) => format!(
                "🔒 Sorry {}, I only answer people I know. Send me a direct message to ask for access.",
                event.actor.name()
            ),
            _ => "🔒 This Butler is private.".to_string(),
        };
        Ok(Admission::Answer { text, kind: "refused", reason })
    }

    /// At most one refusal per identity per hour.
    async fn may_refuse(&self, id: &Identity) -> bool {
        self.gate.take(&format!("access:refused:{id}"), Rate::spaced(REFUSAL_EVERY)).await.is_ok()
    }

    /// One pairing code per identity per hour: a live code means they were told already, and
    /// the gate (shared by the replicas) holds the hour even after the owner denied the code.
    async fn offer_pairing(&self, store: &dyn AccessStore, event: &InboundEvent) -> Result<Admission, StoreError> {
        let id = event.actor.identity.to_string();
        let now = now_ms();
        if store.codes_live(CodeKind::Pair, now).await?.iter().any(|c| c.identity == id) {
            return Ok(Admission::Silent { reason: format!("{id} already has a pairing code") });
        }
        if self.gate.take(&format!("access:pairing:{id}"), Rate::spaced(REFUSAL_EVERY)).await.is_err() {
            return Ok(Admission::Silent { reason: format!("{id} had a pairing code within the hour") });
        }
        let row = CodeRow {
            kind: CodeKind::Pair,
            code: new_code(),
            identity: id.clone(),
            user_id: None,
            display_name: event.actor.display_name.clone(),
            conversation: event.conversation.to_string(),
            created_ms: now,
            expires_ms: now + PAIR_TTL.as_millis() as i64,
        };
        store.code_create(&row).await?;
        tracing::info!(identity = %id, "pairing requested");
        let text = format!(
            "🔒 Hi! I don't know you yet. Your pairing code is `{code}`. Ask my owner to approve it \
             (`butler pair approve {code}`). It expires in an hour.",
            code = row.code
        );
        Ok(Admission::Answer { text, kind: "pairing", reason: format!("pairing code issued to {id}") })
    }

    /// `Some(remaining)` while `id` is locked out for guessing codes.
    pub async fn locked(&self, id: &Identity) -> Option<Duration> {
        self.gate.held(&format!("access:locked:{id}")).await
    }

    /// Counts a wrong code; returns true when this locks the sender out.
    pub async fn wrong_code(&self, id: &Identity) -> bool {
        let wrong = format!("access:wrong:{id}");
        if self.gate.count(&wrong, GUESS_WINDOW).await < u64::from(MAX_WRONG_CODES) {
            return false;
        }
        self.gate.hold(&format!("access:locked:{id}"), LOCKOUT).await;
        self.gate.clear(&wrong).await;
        true
    }

    /// A right code clears the count.
    pub async fn right_code(&self, id: &Identity) {
        self.gate.clear(&format!("access:wrong:{id}")).await;
    }

    /// Issues a link code for `user` asked from `event`'s identity.
    pub async fn link_code(
        &self,
        store: &dyn AccessStore,
        event: &InboundEvent,
        user: &UserRow,
    ) -> Result<String, StoreError> {
        let now = now_ms();
        let row = CodeRow {
            kind: CodeKind::Link,
            code: new_code(),
            identity: event.actor.identity.to_string(),
            user_id: Some(user.id.clone()),
            display_name: event.actor.display_name.clone(),
            conversation: event.conversation.to_string(),
            created_ms: now,
            expires_ms: now + LINK_TTL.as_millis() as i64,
        };
        store.code_create(&row).await?;
        Ok(row.code)
    }

    /// Redeems a link code for `id`: the identity joins the code's user. `Ok(None)` for a wrong
    /// or expired code.
    pub async fn redeem_link(
        &self,
        store: &dyn AccessStore,
        id: &Identity,
        code: &str,
    ) -> Result<Option<CodeRow>, StoreError> {
        let Some(row) = store.code_take(CodeKind::Link, &normalize_code(code), now_ms()).await? else {
            return Ok(None);
        };
        let Some(user_id) = row.user_id.as_deref() else { return Ok(None) };
        store.identity_link(id, user_id).await?;
        self.changed(id).await;
        Ok(Some(row))
    }
}

/// Makes the local operator's identities (`cli:local`, and the web page's when it is this
/// machine's) one person, Butler's owner: the user `local`, so what one made (a briefing's
/// conversation, an alert's) the other lists and answers. Safe to run at every start.
pub async fn ensure_local_owner(
    users: &dyn UserStore,
    identities: &[Identity],
    timezone: &str,
) -> Result<(), StoreError> {
    let new = NewUser {
        id: LOCAL_USER.to_string(),
        display_name: None,
        role: UserRole::Owner,
        timezone: timezone.to_string(),
    };
    for id in identities {
        let user = users.user_ensure(id, &new).await?;
        if user.role < UserRole::Owner {
            users.user_set_role(&user.id, UserRole::Owner).await?;
        }
    }
    Ok(())
}

/// A one-time code that makes the account sending `/link CODE` the local operator: Butler's
/// owner, the same person as the terminal (`cli:local`) and the tokenless web page
/// (`web:local`, made one with the terminal when Butler starts). What `butler init` and `butler pair owner` print; valid for
/// [`OWNER_CODE_TTL`]. The local owner is made here if Butler has not run yet.
pub async fn owner_code(
    (users, codes): (&dyn UserStore, &dyn AccessStore),
    timezone: &str,
) -> Result<String, StoreError> {
    ensure_local_owner(users, &[Identity::new("cli", LOCAL_USER)], timezone).await?;
    let now = now_ms();
    let row = CodeRow {
        kind: CodeKind::Link,
        code: new_code(),
        identity: format!("cli:{LOCAL_USER}"),
        user_id: Some(LOCAL_USER.to_string()),
        display_name: None,
        conversation: format!("cli:{LOCAL_USER}"),
        created_ms: now,
        expires_ms: now + OWNER_CODE_TTL.as_millis() as i64,
    };
    codes.code_create(&row).await?;
    Ok(row.code)
}

/// The conversation a pairing code let in, when it was approved earlier (its welcome message
/// is in the outbox under the code), so a second approval can say so instead of "no such code".
pub async fn approved_earlier(store: &dyn OutboxStore, code: &str) -> Result<Option<String>, StoreError> {
    Ok(store.outbox_get(&format!("pair:{}:approved", normalize_code(code))).await?.map(|row| row.conversation))
}

/// Approves a pairing code (from `/pair approve` or `butler pair approve`): the identity becomes a
/// member, and is told so in the conversation it asked from. `Ok(None)` for a wrong or expired code.
pub async fn approve_pairing(
    (codes, users, outbox): (&dyn AccessStore, &dyn UserStore, &dyn OutboxStore),
    code: &str,
    timezone: &str,
) -> Result<Option<(CodeRow, UserRow)>, StoreError> {
    let Some(row) = codes.code_take(CodeKind::Pair, &normalize_code(code), now_ms()).await? else {
        return Ok(None);
    };
    let Ok(identity) = row.identity.parse::<Identity>() else { return Ok(None) };
    let new = NewUser {
        id: uuid::Uuid::new_v4().to_string(),
        display_name: row.display_name.clone(),
        role: UserRole::Member,
        timezone: timezone.to_string(),
    };
    let mut user = users.user_ensure(&identity, &new).await?;
    if user.role < UserRole::Member {
        users.user_set_role(&user.id, UserRole::Member).await?;
        user.role = UserRole::Member;
    }
    let welcome = NewOutbox::message(
        format!("pair:{}:approved", row.code),
        row.conversation.clone(),
        "✅ You're in: the owner approved your request. Say hello!",
    );
    outbox.outbox_enqueue(&welcome).await?;
    tracing::info!(identity = %row.identity, "pairing approved");
    Ok(Some((row, user)))
}

/// Declines a pairing code. `Ok(None)` for a wrong or expired code.
pub async fn deny_pairing(store: &dyn AccessStore, code: &str) -> Result<Option<CodeRow>, StoreError> {
    store.code_take(CodeKind::Pair, &normalize_code(code), now_ms()).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_random_and_normalize() {
        let a = new_code();
        assert_eq!(a.len(), 9);
        assert_eq!(&a[4..5], "-");
        assert!(a.chars().filter(|c| *c != '-').all(|c| ALPHABET.contains(&(c as u8))));
        assert_ne!(a, new_code());
        let cases =
            [("k7qx-m2pd", "K7QX-M2PD"), ("K7QXM2PD", "K7QX-M2PD"), (" k7qx m2pd ", "K7QX-M2PD"), ("abc", "ABC")];
        for (typed, want) in cases {
            assert_eq!(normalize_code(typed), want);
        }
    }

    #[tokio::test]
    async fn five_wrong_codes_lock_the_sender_out() {
        let access = Access::new(&AccessConfig::default(), [], "UTC");
        let id = Identity::new("web", "mallory");
        for _ in 0..MAX_WRONG_CODES - 1 {
            assert!(!access.wrong_code(&id).await);
            assert!(access.locked(&id).await.is_none());
        }
        assert!(access.wrong_code(&id).await);
        let left = access.locked(&id).await.unwrap();
        assert!(left > LOCKOUT - Duration::from_secs(5) && left <= LOCKOUT);
        let other = Identity::new("web", "alice");
        assert!(access.locked(&other).await.is_none(), "lockout is per sender");
        // A right code clears the count of wrong ones (the lockout stays).
        assert!(!access.wrong_code(&other).await);
        access.right_code(&other).await;
        for _ in 0..MAX_WRONG_CODES - 1 {
            assert!(!access.wrong_code(&other).await);
        }
    }
}

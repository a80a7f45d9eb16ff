//! Placeholder: replaced by the SQLite and Postgres implementations.
#![allow(dead_code, unused)]
use super::*;
pub struct SqliteStore;
pub struct PgStore;
impl SqliteStore {
    pub async fn connect(_url: &str, _max: u32) -> Result<Self> {
        Err(StoreError::Config("placeholder".into()))
    }
}
impl PgStore {
    pub async fn connect(_url: &str, _max: u32) -> Result<Self> {
        Err(StoreError::Config("placeholder".into()))
    }
}
macro_rules! placeholder_impls {
    ($t:ty) => {
        #[async_trait]
        impl InboxStore for $t {
            async fn inbox_insert(&self, _: &InboundEvent) -> Result<bool> { unimplemented!() }
            async fn inbox_claim(&self, _: &[String], _: &str, _: usize) -> Result<Vec<InboxRow>> { unimplemented!() }
            async fn inbox_finish(&self, _: &str, _: InboxStatus, _: Option<&str>) -> Result<()> { unimplemented!() }
            async fn inbox_retry(&self, _: &str, _: i64, _: Option<&str>) -> Result<()> { unimplemented!() }
            async fn inbox_recover(&self, _: &[String]) -> Result<u64> { unimplemented!() }
            async fn inbox_get(&self, _: &str) -> Result<Option<InboxRow>> { unimplemented!() }
        }
        #[async_trait]
        impl SessionStore for $t {
            async fn session_active(&self, _: &str) -> Result<Option<SessionRow>> { unimplemented!() }
            async fn session_open(&self, _: &NewSession) -> Result<SessionRow> { unimplemented!() }
            async fn session_close(&self, _: &str) -> Result<()> { unimplemented!() }
            async fn messages_recent(&self, _: &str, _: usize) -> Result<Vec<StoredMessage>> { unimplemented!() }
            async fn messages_append(&self, _: &str, _: &[NewMessage]) -> Result<i64> { unimplemented!() }
            async fn message_seq_for_event(&self, _: &str, _: &str) -> Result<Option<i64>> { unimplemented!() }
        }
        #[async_trait]
        impl TurnStore for $t {
            async fn finish_event(&self, _: &TurnCommit) -> Result<Option<i64>> { unimplemented!() }
            async fn usage_since(&self, _: &str, _: i64) -> Result<UsageTotals> { unimplemented!() }
        }
        #[async_trait]
        impl OutboxStore for $t {
            async fn outbox_draft(&self, _: &NewOutbox) -> Result<OutboxRow> { unimplemented!() }
            async fn outbox_enqueue(&self, _: &NewOutbox) -> Result<OutboxRow> { unimplemented!() }
            async fn outbox_progress(&self, _: i64, _: &[String]) -> Result<()> { unimplemented!() }
            async fn outbox_due(&self, _: &[String], _: i64, _: usize) -> Result<Vec<OutboxRow>> { unimplemented!() }
            async fn outbox_mark(&self, _: i64, _: &OutboxMark) -> Result<()> { unimplemented!() }
            async fn outbox_get(&self, _: &str) -> Result<Option<OutboxRow>> { unimplemented!() }
        }
        #[async_trait]
        impl MemoryStore for $t {
            async fn memory_add(&self, _: &str, _: &str, _: Option<&str>) -> Result<MemoryRow> { unimplemented!() }
            async fn memory_search(&self, _: &str, _: &str, _: usize) -> Result<Vec<MemoryRow>> { unimplemented!() }
            async fn memory_list(&self, _: &str, _: usize) -> Result<Vec<MemoryRow>> { unimplemented!() }
            async fn memory_forget(&self, _: &str, _: i64) -> Result<bool> { unimplemented!() }
        }
        #[async_trait]
        impl UserStore for $t {
            async fn identity_user(&self, _: &Identity) -> Result<Option<UserRow>> { unimplemented!() }
            async fn user_ensure(&self, _: &Identity, _: &NewUser) -> Result<UserRow> { unimplemented!() }
            async fn conversation_get(&self, _: &str) -> Result<Option<ConversationRow>> { unimplemented!() }
            async fn conversation_ensure(&self, _: &ConversationRow) -> Result<ConversationRow> { unimplemented!() }
        }
        #[async_trait]
        impl WebStore for $t {
            async fn web_insert(&self, _: &NewWebMessage) -> Result<WebMessage> { unimplemented!() }
            async fn web_update(&self, _: i64, _: &str, _: &[butler_channel::Button]) -> Result<Option<WebMessage>> { unimplemented!() }
            async fn web_list(&self, _: &str, _: i64, _: usize) -> Result<Vec<WebMessage>> { unimplemented!() }
        }
        #[async_trait]
        impl Store for $t {
            fn backend(&self) -> Backend { unimplemented!() }
            async fn migrate(&self) -> Result<()> { unimplemented!() }
            async fn ping(&self) -> Result<()> { unimplemented!() }
            async fn close(&self) {}
        }
    };
}
placeholder_impls!(SqliteStore);
placeholder_impls!(PgStore);

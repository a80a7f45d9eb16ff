//! What each component gets of the store: the traits it calls, each a clone of the one store
//! (an upcast), one field per trait. Only the composition root names the whole store; nothing
//! here may build anything but these handles.

use super::embeddings::Recall;
use crate::agent::AgentStores;
use crate::ingress::DispatchStores;
use crate::session::SessionStores;
use crate::store::{MemoryStore, Store};
use crate::tools::ToolStores;
use crate::triage::TriageStores;
use std::sync::Arc;

/// The store traits the agent calls (and its tools, scoped to one user each); `recall` is what
/// memory and transcript searches go through (by meaning too when embeddings are on).
pub(super) fn agent(store: &Arc<dyn Store>, recall: &Recall) -> AgentStores {
    let memory = &recall.memory;
    AgentStores {
        sessions: store.clone(),
        summaries: store.clone(),
        turns: store.clone(),
        memory: memory.clone(),
        approvals: store.clone(),
        audit: store.clone(),
        delegations: store.clone(),
        inbox: store.clone(),
        tools: ToolStores::new(memory.clone(), store.clone(), store.clone(), store.clone(), recall.transcripts.clone()),
    }
}

/// The store traits the sessions call.
pub(super) fn sessions(store: &Arc<dyn Store>) -> SessionStores {
    SessionStores {
        inbox: store.clone(),
        dead_letters: store.clone(),
        replicas: store.clone(),
        recovery: store.clone(),
        sessions: store.clone(),
        summaries: store.clone(),
        profiles: store.clone(),
        turns: store.clone(),
        outbox: store.clone(),
        transcripts: store.clone(),
    }
}

/// The store traits triage calls; `memory` as for [`agent`].
pub(super) fn triage(store: &Arc<dyn Store>, memory: Arc<dyn MemoryStore>) -> TriageStores {
    TriageStores {
        users: store.clone(),
        codes: store.clone(),
        outbox: store.clone(),
        dead_letters: store.clone(),
        sessions: store.clone(),
        turns: store.clone(),
        memory,
        audit: store.clone(),
        approvals: store.clone(),
        delegations: store.clone(),
        schedules: store.clone(),
        profiles: store.clone(),
        transcripts: store.clone(),
    }
}

/// The store traits the dispatcher calls.
pub(super) fn dispatch(store: &Arc<dyn Store>) -> DispatchStores {
    DispatchStores {
        inbox: store.clone(),
        dead_letters: store.clone(),
        replicas: store.clone(),
        recovery: store.clone(),
        turns: store.clone(),
        outbox: store.clone(),
        audit: store.clone(),
    }
}

/// The store traits the web chat calls.
pub(super) fn web(store: &Arc<dyn Store>) -> Arc<crate::web::WebStores> {
    Arc::new(crate::web::WebStores {
        users: store.clone(),
        messages: store.clone(),
        conversations: store.clone(),
        approvals: store.clone(),
        outcomes: store.clone(),
        replies: store.clone(),
        usage: store.clone(),
    })
}

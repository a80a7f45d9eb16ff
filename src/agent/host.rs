//! The agent as the host of its children: the [`ChildHost`] that `child.rs` runs child turns
//! through, so that the child code never imports the turn loop (which imports it).
//!
//! Nothing here may do more than hand a child's turn to the agent's own steps.

use super::child::{ChildHost, ChildTurn, Finish};
use super::input::TurnInput;
use super::progress::NullObserver;
use super::state::Ending;
use super::stores::AgentStores;
use super::turn::Agent;
use crate::config::AgentConfig;
use crate::delegate::Running;
use crate::llm::Tiers;
use crate::store::{NewMessage, StoreError};
use crate::tools::Tools;
use std::sync::Arc;

#[async_trait::async_trait]
impl ChildHost for Agent {
    fn store(&self) -> &AgentStores {
        &self.store
    }

    fn config(&self) -> &AgentConfig {
        self.agent_config()
    }

    fn tiers(&self) -> &Tiers {
        &self.tiers
    }

    fn running(&self) -> &Arc<Running> {
        self.running_children()
    }

    fn owned(&self) -> Arc<dyn ChildHost> {
        Arc::new(self.clone())
    }

    async fn child_turn(
        &self,
        (tier, tools): (&str, &Tools),
        input: TurnInput<'_>,
        finish: Finish<'_>,
    ) -> Result<ChildTurn, StoreError> {
        let child = self.child(tier, tools);
        let mut turn = child.begin(input).await?;
        let (ending, last) = child.loop_until_answer(&mut turn, &mut NullObserver).await?;
        let usage = child.usage(&turn);
        let text = if last.trim().is_empty() { turn.progress.shown.clone() } else { last };
        if !matches!(ending, Ending::Parked) {
            let last = finish(&ending, &text).map(|m| vec![NewMessage::assistant(m, vec![])]).unwrap_or_default();
            child.append(turn.session, &mut turn.progress, last).await?;
        }
        Ok(ChildTurn { ending, text, usage })
    }
}

//! The agent's side of a message's chain (`delegate::Chain`): the tree a conversation's own
//! turn starts (a new chain, or, for the turn a background report starts, the chain of the
//! message that started that task, so the report's turn counts against the same totals), the
//! worst-case cost a model call reserves, the ending a refusal gives the turn, and whether a
//! `delegate` call may start its helper (the message's helper count, a background place).
//!
//! It must never call a model itself nor wait for anything but the chain's own calls.

use super::budget::{day_start_ms, Budget};
use super::input::Tree;
use super::state::Ending;
use super::stores::AgentStores;
use super::tasks::report_of;
use crate::config::{AgentConfig, LimitsConfig};
use crate::delegate::{BackgroundSlot, Caps, Chain, Refusal, Running, Totals};
use crate::llm::{Prices, Usage};
use crate::store::StoreError;
use butler_channel::InboundEvent;

/// What the tree of a conversation's own turn is made from.
pub(super) struct RootParts<'a> {
    pub store: &'a AgentStores,
    pub limits: &'a LimitsConfig,
    pub caps: Caps,
    pub running: &'a Running,
}

/// The tree of a conversation's own turn for `event` in session `session_key`: the chain of
/// the message whose background task `event` reports on (live in this process, or rebuilt from
/// the totals the report carries), else a new chain for `event` itself; and the user's spend
/// today when a dollar limit needs it.
pub(super) async fn root_tree(
    parts: RootParts<'_>,
    event: &InboundEvent,
    session_key: &str,
    user_id: &str,
) -> Result<Tree, StoreError> {
    let report = report_of(event);
    let background = report.is_some();
    let chain = match report {
        Some(report) if !report.origin.is_empty() => match parts.running.chains().adopt(&report.origin, &report.task) {
            Some(chain) => chain,
            None => Chain::new(&report.origin, session_key, parts.caps, report.totals.unwrap_or_default()),
        },
        _ => Chain::new(&event.id.0, session_key, parts.caps, Totals::default()),
    };
    let day_before = if Budget::any(parts.limits) {
        parts.store.turns.usage_since(user_id, day_start_ms(crate::clock::now_ms())).await?.cost_usd
    } else {
        0.0
    };
    let budget = Budget::new(parts.limits, day_before, chain.spent_usd());
    Ok(Tree { depth: 0, root_session: None, chain, budget, background })
}

/// A report whose chain was halted (`/stop`, `/cancel`): its turn ends without a model call
/// and without a reply.
pub(super) fn halted_report(event: &InboundEvent, tree: &Tree) -> bool {
    tree.depth == 0 && report_of(event).is_some() && tree.chain.halted().is_some()
}

/// The most a model call on a model priced `prices` may cost: the request's estimated tokens
/// at the dearer of the input and cache-write prices, and every output token it may write.
pub(super) fn worst_case(prices: &Prices, context_tokens: usize, max_tokens: u32) -> f64 {
    let input = Prices { input: prices.input.max(prices.cache_write), ..*prices };
    let usage = Usage { input_tokens: context_tokens as u64, output_tokens: max_tokens as u64, ..Usage::default() };
    input.cost(&usage)
}

/// How a turn ends when its chain refuses a model call.
pub(super) fn refused(tree: &Tree, refusal: Refusal) -> Ending {
    tracing::info!(origin = %tree.chain.origin(), depth = tree.depth, refusal = ?refusal, "model call refused");
    match refusal {
        Refusal::Halted(_) => Ending::Stopped,
        Refusal::Usd(spent) => Ending::Budget(tree.budget.exceeded(spent).unwrap_or_else(|| refusal.message())),
        r => Ending::Budget(r.message()),
    }
}

/// Whether a `delegate` call of `tree`'s turn for user `user_id` may start its helper: for a
/// background one a place of the user's `max_background` first (taken atomically here; the
/// store also counts other replicas' tasks), then one of the message's helpers. `Err` is the
/// call's refusal.
pub(super) async fn admit_helper(
    running: &std::sync::Arc<Running>,
    store: &AgentStores,
    cfg: &AgentConfig,
    (tree, user_id): (&Tree, &str),
    background: bool,
) -> Result<Result<Option<BackgroundSlot>, String>, StoreError> {
    let slot = if background {
        let max = cfg.delegation.max_background;
        let busy = format!(
            "not started: {max} background tasks are running already ([agent.delegation] max_background); wait \
             for one or /cancel it"
        );
        let Some(slot) = running.background_slot(user_id, max) else { return Ok(Err(busy)) };
        let filter = crate::store::DelegationFilter {
            user_id: Some(user_id.to_string()),
            open_only: true,
            background_only: true,
            limit: max + 1,
            ..Default::default()
        };
        if store.delegations.delegations_list(&filter).await?.len() >= max {
            return Ok(Err(busy));
        }
        Some(slot)
    } else {
        None
    };
    Ok(match tree.chain.start_helper(tree.background || background) {
        Ok(()) => Ok(slot),
        Err(Refusal::Halted(by)) => Err(format!("not started: this request was stopped ({by})")),
        Err(r) => Err(r.message()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_case_prices_every_output_token_and_the_dearer_input() {
        let p = |input, output, cache_write| Prices { input, output, cache_read: 0.0, cache_write };
        // (prices per Mtok, request tokens, max output tokens) -> dollars
        let cases = [
            (p(0.0, 0.0, 0.0), 1000, 1000, 0.0),
            (p(3.0, 15.0, 0.0), 1_000_000, 0, 3.0),
            (p(3.0, 15.0, 3.75), 1_000_000, 100_000, 3.75 + 1.5),
        ];
        for (prices, tokens, max, want) in cases {
            let got = worst_case(&prices, tokens, max);
            assert!((got - want).abs() < 1e-9, "{prices:?} {tokens} {max}: {got}");
        }
    }
}

//! A tool round under the permission policy: each call is looked up, validated, passed through
//! pre_tool_use hooks and the policy, and then runs, is refused with a reason, or waits for a
//! person's approval (recorded with a random id, the exact arguments' hash and who may decide).
//! An `ask_user` call becomes a question to the person (src/agent/ask.rs) and parks the turn
//! the same way. Also what happens when the person answers: the approved call runs exactly as
//! recorded, a denied or expired one gets a refusal result, a question's call gets the answer.
//!
//! Nothing here may run a call the policy did not allow or a person did not approve, and every
//! decision leaves an audit row.

use super::ask::{answer_result, question_row, Asked, ASK_USER_TOOL};
use super::exec::{prepare, run_calls, Ready, ToolResult};
use super::narrow::Narrowing;
use super::stores::AgentStores;
use crate::clock::now_ms;
use crate::config::{HookEvent, LimitsConfig};
use crate::hooks::{HookOutcome, Hooks};
use crate::llm::ToolCall;
use crate::permissions::approval::{approval_id, args_hash};
use crate::permissions::{Permission, Policy, Request};
use crate::store::{ApprovalKind, ApprovalRow, ApprovalStatus, AuditRow, NewMessage, Role, StoreError};
use crate::tools::{ToolCtx, Tools};
use butler_channel::InboundEvent;
use serde_json::json;
use std::time::Duration;

/// The result of one tool round.
pub(super) struct Round {
    /// One result per call that did not wait, in call order.
    pub results: Vec<ToolResult>,
    /// Calls waiting for a person.
    pub asks: Vec<ApprovalRow>,
    /// Permitted `delegate` calls: the agent runs their children after the round.
    pub children: Vec<(ToolCall, serde_json::Value)>,
}

/// How a resumed round goes on.
pub(super) enum Resumed {
    /// Other calls of the round still wait for a person.
    Waiting,
    /// Continue the turn with the model.
    Continue,
    /// The turn was stopped (/stop) while waiting: end it without asking the model.
    Stopped,
    /// The call was answered already (a duplicate event): nothing to do.
    Stale,
}

/// What a tool round needs of the agent: the tools, the policy, the hooks, the limits and the
/// store for audit rows and granted approvals.
pub(super) struct ToolRound<'a> {
    pub(super) store: &'a AgentStores,
    pub(super) tools: &'a Tools,
    pub(super) policy: &'a Policy,
    pub(super) hooks: &'a Hooks,
    pub(super) limits: &'a LimitsConfig,
}

impl ToolRound<'_> {
    fn audit(&self, ctx: &ToolCtx, actor: &str, tool: &str, hash: &str, outcome: &str, reason: &str) -> AuditRow {
        AuditRow {
            at_ms: now_ms(),
            actor: actor.to_string(),
            user_id: ctx.user.id.clone(),
            session_id: ctx.session_id.clone(),
            tool: tool.to_string(),
            args_hash: hash.to_string(),
            outcome: outcome.to_string(),
            reason: reason.to_string(),
        }
    }

    /// Decides and runs one round of calls; a call `narrowing` (a loaded skill's
    /// `allowed-tools`) does not permit is refused before anything else.
    pub(super) async fn tool_round(
        &self,
        ctx: &ToolCtx,
        event: &InboundEvent,
        session_key: &str,
        calls: &[ToolCall],
        narrowing: &Narrowing,
    ) -> Result<Round, StoreError> {
        let mut immediate: Vec<(usize, ToolResult)> = Vec::new();
        let mut ready: Vec<(usize, Ready)> = Vec::new();
        let mut asks = Vec::new();
        let mut children = Vec::new();
        let actor = event.actor.identity.to_string();
        for (i, call) in calls.iter().enumerate() {
            let hash = args_hash(&call.arguments);
            let refuse = |content: String| ToolResult::error(call.id.clone(), content);
            if let Some(reason) = narrowing.refusal(&call.name) {
                self.store.audit.audit_add(&self.audit(ctx, &actor, &call.name, &hash, "refused", &reason)).await?;
                immediate.push((i, refuse(reason)));
                continue;
            }
            let (tool, args) = match prepare(self.tools, call) {
                Ok(p) => p,
                Err(e) => {
                    immediate.push((i, refuse(e.to_string())));
                    continue;
                }
            };
            let payload = json!({"tool": call.name, "arguments": args, "session": ctx.session_id, "user": ctx.user.id});
            if let HookOutcome::Block(reason) = self.hooks.run(HookEvent::PreToolUse, Some(&call.name), &payload).await
            {
                self.store.audit.audit_add(&self.audit(ctx, &actor, &call.name, &hash, "blocked", &reason)).await?;
                immediate.push((i, refuse(format!("blocked by a hook: {reason}"))));
                continue;
            }
            if call.name == ASK_USER_TOOL {
                match self.question(ctx, event, session_key, call, &args).await? {
                    Ok(row) => asks.push(row),
                    Err(why) => immediate.push((i, refuse(why))),
                }
                continue;
            }
            let spec = tool.spec();
            let action = tool.action(ctx, &args);
            let granted = !spec.read_only && self.store.approvals.approval_granted(&ctx.session_id, &spec.name).await?;
            let req = Request {
                tool: spec,
                action: &action,
                channel: event.channel(),
                kind: event.kind,
                role: ctx.user.role,
                granted,
                args: &args,
            };
            let (outcome, reason) = match self.policy.decide(&req) {
                Permission::Allow(reason) if call.name == crate::delegate::DELEGATE_TOOL => {
                    children.push((call.clone(), args));
                    ("allowed", reason)
                }
                Permission::Allow(reason) => {
                    ready.push((i, Ready { call: call.clone(), tool: tool.clone(), args }));
                    ("allowed", reason)
                }
                Permission::Deny(reason) => {
                    crate::metrics::METRICS.tool_calls.inc(&[&spec.name, "denied"]);
                    immediate.push((i, refuse(format!("denied by policy: {reason}"))));
                    ("denied", reason)
                }
                Permission::Ask(reason) => {
                    let timeout = self.policy.approval_timeout();
                    let now = now_ms();
                    asks.push(ApprovalRow {
                        id: approval_id(),
                        session_id: ctx.session_id.clone(),
                        session_key: session_key.to_string(),
                        conversation: event.conversation.to_string(),
                        event_id: event.id.0.clone(),
                        tool_call_id: call.id.clone(),
                        tool: spec.name.clone(),
                        args_hash: hash.clone(),
                        // A leak by URL is asked about even where nothing else is: say why.
                        summary: if reason.starts_with(crate::permissions::exfil::LEAK_REASON) {
                            format!("{} (careful: {reason})", action.summary)
                        } else {
                            action.summary.clone()
                        },
                        requester: actor.clone(),
                        requester_user: ctx.user.id.clone(),
                        approvers: self.policy.approvers_in(&event.conversation, event.kind, ctx.user.role),
                        kind: ApprovalKind::Tool,
                        options: Vec::new(),
                        answer: None,
                        detail: action.detail.clone(),
                        status: ApprovalStatus::Pending,
                        scope: None,
                        decided_by: None,
                        decided_ms: None,
                        created_ms: now,
                        expires_ms: now + timeout.as_millis() as i64,
                    });
                    ("asked", reason)
                }
            };
            self.store.audit.audit_add(&self.audit(ctx, &actor, &call.name, &hash, outcome, &reason)).await?;
        }
        let order: Vec<usize> = ready.iter().map(|(i, _)| *i).collect();
        let ran = self.run_ready(ctx, ready.into_iter().map(|(_, r)| r).collect()).await;
        immediate.extend(order.into_iter().zip(ran));
        immediate.sort_by_key(|(i, _)| *i);
        Ok(Round { results: immediate.into_iter().map(|(_, r)| r).collect(), asks, children })
    }

    /// An `ask_user` call (validated, past the hooks): the question it asks, recorded as asked
    /// (no permission check: asking changes nothing), or why its arguments are refused.
    async fn question(
        &self,
        ctx: &ToolCtx,
        event: &InboundEvent,
        session_key: &str,
        call: &ToolCall,
        args: &serde_json::Value,
    ) -> Result<Result<ApprovalRow, String>, StoreError> {
        let at = Asked { session_id: &ctx.session_id, session_key, user_id: &ctx.user.id, event };
        let row = question_row(&at, call, args, self.policy.approval_timeout());
        let hash = args_hash(&call.arguments);
        let actor = event.actor.identity.to_string();
        let (outcome, reason) = match &row {
            Ok(r) => ("asked", format!("question {} to {}", r.id, r.requester)),
            Err(why) => ("refused", why.clone()),
        };
        self.store.audit.audit_add(&self.audit(ctx, &actor, &call.name, &hash, outcome, &reason)).await?;
        Ok(row)
    }

    /// Runs permitted calls concurrently, then tells post_tool_use hooks.
    async fn run_ready(&self, ctx: &ToolCtx, ready: Vec<Ready>) -> Vec<ToolResult> {
        if ready.is_empty() {
            return Vec::new();
        }
        let timeout = Duration::from_secs(self.limits.tool_timeout_secs);
        let names: Vec<String> = ready.iter().map(|r| r.call.name.clone()).collect();
        let results = run_calls(ctx, ready, timeout, self.limits.max_tool_result_chars).await;
        // Observers, all at once: a slow one delays the round by its timeout at most once.
        let observed = names.iter().zip(&results).map(|(name, r)| {
            let payload = json!({"tool": name, "result": r.content, "is_error": r.is_error, "session": ctx.session_id});
            async move { self.hooks.run(HookEvent::PostToolUse, Some(name), &payload).await }
        });
        futures::future::join_all(observed).await;
        results
    }

    /// Answers the call an approval was about (run it, or record the refusal). `history` is the
    /// session transcript; returns the tool results to append and how the turn goes on.
    pub(super) async fn resume_call(
        &self,
        ctx: &ToolCtx,
        history: &[NewMessage],
        approval: &ApprovalRow,
        pending_left: usize,
    ) -> Result<(Vec<ToolResult>, Resumed), StoreError> {
        let dangling = super::context::dangling_results(history);
        let Some(call) = history
            .iter()
            .rev()
            .find(|m| m.role() == Role::Assistant && !m.tool_calls.is_empty())
            .and_then(|m| m.tool_calls.iter().find(|c| c.id == approval.tool_call_id))
            .filter(|c| dangling.iter().any(|d| d.tool_call_id.as_deref() == Some(c.id.as_str())))
        else {
            return Ok((vec![], Resumed::Stale));
        };
        if approval.kind == ApprovalKind::Question && approval.status != ApprovalStatus::Cancelled {
            // A question's call gets the answer (or why there is none) as its result.
            let (content, is_error) = answer_result(approval).unwrap_or_else(|| ("not answered".into(), true));
            let result = ToolResult { call_id: call.id.clone(), content, is_error, images: Vec::new() };
            return Ok((vec![result], next(pending_left)));
        }
        let by = approval.decided_by.clone().unwrap_or_default();
        let refuse = |content: String| ToolResult::error(call.id.clone(), content);
        match approval.status {
            ApprovalStatus::Cancelled => {
                // /stop: every call still waiting in the round is closed, and the turn ends.
                let results = dangling
                    .iter()
                    .filter_map(|d| d.tool_call_id.clone())
                    .map(|id| ToolResult::error(id, "not run: stopped before approval"))
                    .collect();
                Ok((results, Resumed::Stopped))
            }
            ApprovalStatus::Approved if args_hash(&call.arguments) != approval.args_hash => {
                let reason = "the arguments changed after the request was made";
                self.store
                    .audit
                    .audit_add(&self.audit(ctx, &by, &call.name, &approval.args_hash, "refused", reason))
                    .await?;
                Ok((vec![refuse(format!("not run: {reason}"))], next(pending_left)))
            }
            ApprovalStatus::Approved => {
                let result = match prepare(self.tools, call) {
                    Ok((tool, args)) => self.run_ready(ctx, vec![Ready { call: call.clone(), tool, args }]).await,
                    Err(e) => vec![refuse(e.to_string())],
                };
                Ok((result, next(pending_left)))
            }
            ApprovalStatus::Expired => {
                crate::metrics::METRICS.tool_calls.inc(&[&call.name, "expired"]);
                Ok((vec![refuse("not run: nobody approved it in time (expired)".into())], next(pending_left)))
            }
            ApprovalStatus::Denied | ApprovalStatus::Pending => {
                crate::metrics::METRICS.tool_calls.inc(&[&call.name, "denied"]);
                Ok((vec![refuse(format!("not run: {by} denied it"))], next(pending_left)))
            }
        }
    }
}

fn next(pending_left: usize) -> Resumed {
    if pending_left > 0 {
        Resumed::Waiting
    } else {
        Resumed::Continue
    }
}

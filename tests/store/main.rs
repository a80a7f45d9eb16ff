//! The store contract suite: every test is written once, as an async fn taking an
//! `Arc<dyn Store>`, and runs against both a SQLite file in a temp dir and a fresh Postgres
//! database (`BUTLER_TEST_PG_URL`, default the local server).
//!
//! Tests here must never depend on which backend they run against, on wall-clock timing beyond
//! "now", or on each other; each gets its own empty, migrated database.

#[path = "../support/mod.rs"]
mod support;

mod access;
mod approvals;
mod audit;
mod connect;
mod dead_letter;
mod delegations;
mod fixtures;
mod inbox;
mod memory;
mod outbox;
mod outcome;
mod questions;
mod recovery;
mod replicas;
mod schedules;
mod sessions;
mod transcripts;
mod turn;
mod upgrade;
mod users;
mod vectors;
mod web;

use butler::store::Store;
use std::future::Future;
use std::sync::Arc;
use support::db::{PgTestDb, SqliteTestDb};

/// Runs `test` against a migrated SQLite store in a temp dir.
pub async fn on_sqlite<F, Fut>(test: F)
where
    F: FnOnce(Arc<dyn Store>) -> Fut,
    Fut: Future<Output = ()>,
{
    let db = SqliteTestDb::new();
    let store = butler::store::connect(&db.url, 4).await.expect("open SQLite");
    store.migrate().await.expect("migrate SQLite");
    test(store.clone()).await;
    store.close().await;
}

/// Runs `test` against a migrated store on a fresh Postgres database, dropped afterwards.
pub async fn on_postgres<F, Fut>(test: F)
where
    F: FnOnce(Arc<dyn Store>) -> Fut,
    Fut: Future<Output = ()>,
{
    let db = PgTestDb::create().await;
    let store = butler::store::connect(&db.url, 8).await.expect("connect Postgres");
    store.migrate().await.expect("migrate Postgres");
    test(store.clone()).await;
    store.close().await;
}

/// Declares each contract test twice: `sqlite::<name>` and `postgres::<name>`.
macro_rules! contract {
    ($($name:ident => $test:path),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    crate::on_sqlite($test).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    crate::on_postgres($test).await;
                }
            )*
        }
    };
}

contract! {
    basics_migrate_twice_and_ping => crate::connect::basics,
    inbox_duplicate_ids_are_dropped => crate::inbox::duplicate_ids_are_dropped,
    inbox_claims_in_order_by_channel => crate::inbox::claims_in_order_by_channel,
    inbox_concurrent_claims_never_overlap => crate::inbox::concurrent_claims_never_overlap,
    inbox_finish_retry_recover => crate::inbox::finish_retry_recover,
    inbox_nul_text_is_stored_sanitized => crate::dead_letter::nul_text_is_stored_sanitized,
    inbox_dead_letters_list_count_requeue_release => crate::dead_letter::dead_letters_list_count_requeue_release,
    inbox_a_death_charges_only_the_running_event => crate::recovery::a_death_charges_only_the_running_event,
    inbox_only_the_holder_begins_an_event => crate::recovery::only_the_holder_begins_an_event,
    outbox_orphan_drafts_are_settled => crate::recovery::orphan_drafts_are_settled,
    session_open_race_returns_one_session => crate::sessions::open_race_returns_one_session,
    session_close_then_open_keeps_transcript => crate::sessions::close_then_open_keeps_transcript,
    transcript_order_and_tool_calls_round_trip => crate::sessions::transcript_round_trip,
    transcript_concurrent_appends_get_distinct_seqs => crate::sessions::concurrent_appends,
    finish_event_commits_everything => crate::turn::commits_everything,
    finish_event_is_idempotent => crate::turn::is_idempotent,
    finish_event_is_atomic => crate::turn::is_atomic,
    usage_totals_per_user_and_time => crate::turn::usage_totals,
    usage_kinds_context_and_summaries => crate::turn::usage_kinds_context_and_summaries,
    outbox_draft_and_enqueue => crate::outbox::draft_and_enqueue,
    outbox_due_mark_retry => crate::outbox::due_mark_retry,
    outbox_revision_during_delivery_stays_pending => crate::outbox::revision_during_delivery_stays_pending,
    outbox_a_scheduled_jobs_reply_is_titled_with_its_name => crate::outbox::a_scheduled_jobs_reply_is_titled_with_its_name,
    outbox_held_replies_are_released_per_conversation => crate::outbox::held_replies_are_released_per_conversation,
    ingress_releases_held_replies_only_on_windowed_channels => crate::outbox::ingress_releases_only_on_windowed_channels,
    ingress_read_positions_are_kept_per_name => crate::inbox::read_positions_are_kept_per_name,
    memory_search_or_semantics_and_ranking => crate::memory::or_semantics_and_ranking,
    memory_search_is_per_user => crate::memory::per_user,
    memory_search_survives_hostile_input => crate::memory::hostile_input,
    memory_list_and_forget_own_rows_only => crate::memory::list_and_forget,
    memory_scopes_never_see_each_other => crate::memory::scopes_are_separate,
    memory_update_own_only => crate::memory::memory_update_own_only,
    embed_queue_follows_tracking => crate::vectors::queue_follows_tracking,
    embed_a_claim_stores_only_what_it_holds => crate::vectors::a_claim_stores_only_what_it_holds,
    embed_failed_tries_wait_and_are_counted => crate::vectors::failed_tries_wait_and_are_counted,
    embed_backfills_run_once_per_model => crate::vectors::backfills_run_once_per_model,
    embed_transcript_vectors_stay_in_their_scope => crate::vectors::transcript_vectors_stay_in_their_scope,
    user_ensure_links_identities => crate::users::ensure_links_identities,
    user_ensure_race_creates_one_user => crate::users::ensure_race,
    conversation_ensure_first_writer_wins => crate::users::conversation_first_writer_wins,
    web_messages_idempotent_and_listed => crate::web::idempotent_and_listed,
    web_conversations_listed_renamed_hidden => crate::web::conversations_listed_renamed_hidden,
    web_live_buttons_are_the_shown_ones => crate::web::live_buttons_are_the_shown_ones,
    web_one_persons_conversations_are_listed_together => crate::web::one_persons_conversations_are_listed_together,
    code_create_refuses_live_duplicates => crate::access::code_create_and_duplicate,
    code_take_is_single_use_under_races => crate::access::code_take_once,
    codes_expire_and_list_newest_first => crate::access::codes_expire_and_list_newest_first,
    identity_link_new_identity => crate::access::link_new_identity,
    identity_link_moves_other_users_data => crate::access::link_moves_other_users_data,
    identity_link_to_missing_user_changes_nothing => crate::access::link_to_missing_user_changes_nothing,
    identity_link_concurrent_moves_delete_old_user_once => crate::access::concurrent_links_delete_old_user_once,
    user_set_role_reports_existence => crate::access::set_role,
    user_identities_sorted => crate::access::identities_sorted,
    decisions_recent_and_counted_since => crate::audit::recent_and_since,
    audit_recent_newest_first_and_round_trip => crate::audit::audit_recent_and_round_trip,
    finish_event_stores_approvals_and_notices => crate::approvals::commit_stores_approvals_and_notices,
    finish_event_rerun_adds_no_approvals_or_notices => crate::approvals::rerun_adds_nothing,
    finish_event_approvals_and_notices_are_atomic => crate::approvals::commit_is_atomic,
    approval_decide_wins_once_under_races => crate::approvals::decide_wins_once,
    approval_decide_revises_only_its_message => crate::approvals::decide_revises_its_message,
    approval_decide_refuses_unknown_and_decided => crate::approvals::decide_refuses_unknown_and_decided,
    approvals_due_by_expiry_inclusive => crate::approvals::due_order_and_edge,
    approvals_pending_per_session_oldest_first => crate::approvals::pending_per_session,
    approval_granted_only_for_session_scope => crate::approvals::granted_only_for_session_scope,
    question_round_trips_and_is_answered_once => crate::questions::round_trip_and_answer_once,
    question_pending_of_one_person_here => crate::questions::pending_question_of_one_person_here,
    approval_waiting_for_a_delivered_message => crate::questions::request_delivered_as_a_message,
    delegations_start_update_find_list_deliver => crate::delegations::start_update_find_list_deliver,
    schedule_put_creates_then_updates_in_place => crate::schedules::put_creates_then_updates_in_place,
    schedules_list_filters_and_due_order => crate::schedules::list_filters_and_due_order,
    schedule_set_pause_remove_and_advance => crate::schedules::set_pause_remove_and_advance,
    schedule_claim_wins_once_under_races => crate::schedules::claim_wins_once_under_races,
    schedule_runs_read_their_delivery => crate::schedules::runs_read_their_delivery,
    replica_fences_grow_and_old_tokens_are_refused => crate::replicas::fences_grow_and_old_tokens_are_refused,
    replica_routed_events_go_to_their_replica_first => crate::replicas::routed_events_go_to_their_replica_first,
    replica_conversation_stays_in_order_across_replicas => crate::replicas::a_conversation_stays_in_order_across_replicas,
    replica_takeover_returns_only_dead_replicas_events => crate::replicas::takeover_returns_only_dead_replicas_events,
    replica_claim_whose_answer_was_lost_is_undone => crate::replicas::a_claim_whose_answer_was_lost_is_undone,
    replica_outbox_row_is_claimed_by_one_sender => crate::replicas::an_outbox_row_is_claimed_by_one_sender,
    schedule_jobs_follow_a_linked_identity => crate::schedules::jobs_follow_a_linked_identity,
    outcome_follows_an_event_to_its_end => crate::outcome::follows_an_event_to_its_end,
    transcript_search_stays_in_its_scope => crate::transcripts::search_stays_in_its_scope,
    transcript_sessions_recent_lists_own_direct_ones => crate::transcripts::recent_lists_own_direct_ones,
    transcript_resume_reopens_only_own_direct_sessions => crate::transcripts::resume_only_own_direct,
}

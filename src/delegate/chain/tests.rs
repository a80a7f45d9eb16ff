use super::*;
use futures::FutureExt;

fn chain(calls: u32, helpers: u32) -> Arc<Chain> {
    Chain::new("web:c1:m1", "dm:web:c1:local", Caps { model_calls: calls, helpers }, Totals::default())
}

#[test]
fn counts_stop_at_their_caps_and_a_halt_stops_everything() {
    // (model calls, helpers, halted by) -> what the next call and the next helper get
    type Want = (Option<Refusal>, Option<Refusal>);
    let cases: Vec<(u32, u32, Option<&str>, Want)> = vec![
        (0, 0, None, (None, None)),
        (2, 2, None, (None, Some(Refusal::Helpers(2)))),
        (3, 0, None, (Some(Refusal::ModelCalls(3)), None)),
        (0, 0, Some("/stop"), (Some(Refusal::Halted("/stop".into())), Some(Refusal::Halted("/stop".into())))),
    ];
    for (i, (calls, helpers, halt, (call_want, helper_want))) in cases.into_iter().enumerate() {
        let c = chain(3, 2);
        for _ in 0..calls {
            c.admit(0.0, None, true).now_or_never().unwrap().unwrap().settle(0.0);
        }
        for _ in 0..helpers {
            c.start_helper(true).unwrap();
        }
        if let Some(by) = halt {
            assert!(c.halt(by) && !c.halt(by), "case {i}: halts once");
            assert!(c.halt_token().is_cancelled());
        }
        let call = c.admit(0.0, None, true).now_or_never().expect("never waits without a dollar cap");
        assert_eq!(call.err(), call_want, "case {i}: call");
        let helper = c.start_helper(true);
        assert_eq!(helper.err(), helper_want, "case {i}: helper");
        if halt.is_some() {
            // The message's own turn and its foreground helpers go on (`/stop` stops them itself).
            assert!(c.check(None, false).is_ok() && c.start_helper(false).is_ok(), "case {i}");
        }
    }
}

#[test]
fn calls_at_the_same_time_never_pass_the_cap_together() {
    let c = chain(5, 5);
    let admitted = std::sync::atomic::AtomicU32::new(0);
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
                if let Ok(t) = rt.block_on(c.admit(0.0, None, true)) {
                    admitted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    t.settle(0.0);
                }
                if c.start_helper(false).is_ok() {
                    admitted.fetch_add(100, std::sync::atomic::Ordering::SeqCst);
                }
            });
        }
    });
    assert_eq!(admitted.into_inner(), 505);
    assert_eq!(c.totals(), Totals { model_calls: 5, helpers: 5, usd: 0.0 });
}

#[tokio::test]
async fn a_call_waits_while_running_calls_might_reach_the_dollar_cap_and_is_refused_once_spent_has() {
    let c = chain(100, 100);
    let cap = Some(1.0);
    let first = c.admit(0.6, cap, true).await.unwrap();
    // 0 spent + 0.6 reserved < 1: a second call may start; now 1.2 might be spent.
    let second = c.admit(0.6, cap, true).await.unwrap();
    let mut third = Box::pin(c.admit(0.6, cap, true));
    assert!(third.as_mut().now_or_never().is_none(), "waits: the running calls might reach the cap");
    first.settle(0.3);
    // 0.3 spent + 0.6 reserved < 1: it may start.
    let third = third.await.unwrap();
    second.settle(0.5);
    third.settle(0.4);
    // 1.2 spent: more than the cap by less than one call's cost.
    assert!((c.spent_usd() - 1.2).abs() < 1e-9, "{}", c.spent_usd());
    assert_eq!(c.admit(0.6, cap, true).await.err(), Some(Refusal::Usd(1.2)));
    assert_eq!(c.check(cap, true), Err(Refusal::Usd(1.2)));
    assert_eq!(c.totals().model_calls, 3, "a refused call is not counted");
}

#[tokio::test]
async fn a_dropped_ticket_releases_its_reservation_and_a_halt_wakes_waiting_calls() {
    let c = chain(100, 100);
    let cap = Some(1.0);
    let t = c.admit(2.0, cap, true).await.unwrap();
    let mut waiting = Box::pin(c.admit(2.0, cap, true));
    assert!(waiting.as_mut().now_or_never().is_none());
    drop(t);
    let t = waiting.await.unwrap();
    assert_eq!(c.spent_usd(), 0.0, "nothing spent by a dropped ticket");
    let mut waiting = Box::pin(c.admit(2.0, cap, true));
    assert!(waiting.as_mut().now_or_never().is_none());
    c.halt("/cancel");
    assert_eq!(waiting.await.err(), Some(Refusal::Halted("/cancel".into())));
    drop(t);
}

#[test]
fn a_chain_taken_up_from_a_report_counts_on_from_its_totals() {
    let from = Totals { model_calls: 4, helpers: 2, usd: 0.25 };
    let c = Chain::new("web:c1:m1", "k", Caps { model_calls: 5, helpers: 2 }, from);
    assert_eq!(c.totals(), from);
    assert!(c.admit(0.0, None, false).now_or_never().unwrap().is_ok());
    assert_eq!(c.admit(0.0, None, false).now_or_never().unwrap().err(), Some(Refusal::ModelCalls(5)));
    assert_eq!(c.start_helper(false), Err(Refusal::Helpers(2)));
    let json = serde_json::to_value(from).unwrap();
    assert_eq!(serde_json::from_value::<Totals>(json).unwrap(), from);
}

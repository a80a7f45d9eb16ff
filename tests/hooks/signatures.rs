//! The HTTP side of `POST /hooks/{name}`: signatures (GitHub and Butler schemes), the body
//! limit, unknown sources, bad bodies, redeliveries and the rate limit. Every refusal must be
//! JSON and leave the inbox untouched.

use crate::common::*;
use crate::support::app::TestApp;
use serde_json::json;
use std::time::Duration;

/// A GitHub source and a Butler-scheme source, both dropping everything by default.
const TWO_SOURCES: &str = r#"
[[triggers]]
name = "github"
secret = "gh-webhook-secret-4f1d9c"
signature = "github"

[[triggers]]
name = "deploys"
secret = "butler-hook-secret-88a2e0"
signature = "butler"
"#;

async fn app(toml_text: &str) -> TestApp {
    let (cfg, dir) = hook_config(None, toml_text);
    TestApp::start(cfg, Some(dir)).await
}

#[tokio::test]
async fn good_github_and_butler_signatures_are_accepted() {
    let t = app(TWO_SOURCES).await;
    let push = fixture("push");
    let a = post_github(&t, "github", "push", "0b1c7e52-2763-11f0-9a9e-5bd3c1c5a3d7", &push).await;
    let gh_id = event_id("github", &push);
    assert_eq!((a.status, &a.json["event_id"]), (202, &json!(gh_id)));
    assert_eq!(a.json["duplicate"], false);

    let body = br#"{"service":"api","version":"2025.05.02-3","status":"deployed"}"#;
    let ts = now_secs();
    let b = post(&t, "deploys", &butler_headers(BUTLER_SECRET, ts, Some("deploy-771"), body), body.to_vec()).await;
    let deploy_id = butler_event_id("deploys", ts, body);
    assert_eq!((b.status, &b.json["event_id"]), (202, &json!(deploy_id)));

    let rows = settled(&t, 2).await;
    let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, [gh_id.as_str(), deploy_id.as_str()]);
    assert!(rows.iter().all(|r| r.status == "dropped"), "{rows:?}");
    let d = decision(&t, &deploy_id).await;
    assert_eq!((d.decision.as_str(), d.reason.as_str()), ("drop", "no rule matched; source default drop"));
    t.stop().await;
}

#[tokio::test]
async fn bad_signatures_get_401_and_store_nothing() {
    let t = app(TWO_SOURCES).await;
    let push = fixture("push");
    let other = fixture("issues_opened");
    let now = now_secs();
    let gh = |secret: &str, signed: &[u8]| github_headers(secret, "push", "d-1", signed);
    let without = |mut h: Headers, name: &str| {
        h.retain(|(k, _)| *k != name);
        h
    };
    let small = br#"{"service":"api","status":"deployed"}"#;
    // (case, source, headers, body sent, expected error code)
    let cases: Vec<(&str, &str, Headers, Vec<u8>, &str)> = vec![
        (
            "github: no signature",
            "github",
            without(gh(GITHUB_SECRET, &push), "x-hub-signature-256"),
            push.clone(),
            "missing_signature",
        ),
        ("github: wrong secret", "github", gh("not-the-secret", &push), push.clone(), "bad_signature"),
        ("github: tampered body", "github", gh(GITHUB_SECRET, &push), other.clone(), "bad_signature"),
        (
            "github: signature of the body without its last byte",
            "github",
            gh(GITHUB_SECRET, &push[..push.len() - 1]),
            push.clone(),
            "bad_signature",
        ),
        (
            "github: sha1 header style",
            "github",
            vec![("x-hub-signature-256", format!("sha1={}", "ab".repeat(20)))],
            push.clone(),
            "malformed_signature",
        ),
        (
            "github: not hex",
            "github",
            vec![("x-hub-signature-256", format!("sha256={}", "zz".repeat(32)))],
            push.clone(),
            "malformed_signature",
        ),
        (
            "butler: github's header instead of its own",
            "deploys",
            vec![("x-hub-signature-256", github_signature(BUTLER_SECRET, small))],
            small.to_vec(),
            "missing_signature",
        ),
        ("butler: wrong secret", "deploys", butler_headers("nope", now, None, small), small.to_vec(), "bad_signature"),
        (
            "butler: tampered body",
            "deploys",
            butler_headers(BUTLER_SECRET, now, None, small),
            br#"{"service":"api","status":"rolled-back"}"#.to_vec(),
            "bad_signature",
        ),
        (
            "butler: stale timestamp",
            "deploys",
            butler_headers(BUTLER_SECRET, now - 600, None, small),
            small.to_vec(),
            "stale_timestamp",
        ),
        (
            "butler: from the future",
            "deploys",
            butler_headers(BUTLER_SECRET, now + 600, None, small),
            small.to_vec(),
            "stale_timestamp",
        ),
        (
            "butler: no timestamp",
            "deploys",
            without(butler_headers(BUTLER_SECRET, now, None, small), "x-butler-timestamp"),
            small.to_vec(),
            "missing_timestamp",
        ),
        (
            "butler: timestamp moved after signing",
            "deploys",
            {
                let mut h = butler_headers(BUTLER_SECRET, now - 600, None, small);
                h.iter_mut().find(|(k, _)| *k == "x-butler-timestamp").unwrap().1 = now.to_string();
                h
            },
            small.to_vec(),
            "bad_signature",
        ),
    ];
    for (case, source, headers, body, code) in cases {
        let a = post(&t, source, &headers, body).await;
        assert_eq!(a.status, 401, "{case}: {}", a.json);
        assert_eq!(a.json["error"]["code"], code, "{case}: {}", a.json);
        assert!(a.json["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{case}");
    }
    // Give a wrongly accepted event time to show up before checking nothing was stored.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(hook_inbox(&t).await.is_empty(), "{:?}", hook_inbox(&t).await);
    t.stop().await;
}

#[tokio::test]
async fn oversized_bodies_get_a_json_413_and_store_nothing() {
    let (mut cfg, dir) = hook_config(None, TWO_SOURCES);
    cfg.server.max_body_bytes = 4096;
    let t = TestApp::start(cfg, Some(dir)).await;
    let push = fixture("push");
    assert!(push.len() > 4096);
    let a = post_github(&t, "github", "push", "big-1", &push).await;
    assert_eq!(a.status, 413, "{}", a.json);
    assert_eq!(a.json["error"]["code"], "body_too_large");
    // Just under the limit is fine.
    let mut body = br#"{"pad":""#.to_vec();
    body.resize(4096 - 2, b'x');
    body.extend_from_slice(b"\"}");
    assert_eq!(post_github(&t, "github", "ping", "small-1", &body).await.status, 202);
    let rows = settled(&t, 1).await;
    assert_eq!(rows.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), [event_id("github", &body)]);
    t.stop().await;
}

#[tokio::test]
async fn unknown_sources_and_bad_bodies_get_json_errors() {
    let t = app(TWO_SOURCES).await;
    let push = fixture("push");
    let a = post_github(&t, "gitlab", "push", "x-1", &push).await;
    assert_eq!((a.status, &a.json["error"]["code"]), (404, &json!("unknown_source")));
    let r = t.http.get(t.url("/hooks/github")).send().await.unwrap();
    assert_eq!((r.status().as_u16(), r.headers()["allow"].to_str().unwrap()), (405, "POST"));
    assert_eq!(r.json::<serde_json::Value>().await.unwrap()["error"]["code"], "method_not_allowed");
    // GitHub's other content type: a form-encoded `payload=` body, correctly signed.
    let form = b"payload=%7B%22zen%22%3A%22Design+for+failure.%22%7D".to_vec();
    let mut headers = github_headers(GITHUB_SECRET, "ping", "form-1", &form);
    headers[0].1 = "application/x-www-form-urlencoded".into();
    let a = post(&t, "github", &headers, form).await;
    assert_eq!((a.status, &a.json["error"]["code"]), (400, &json!("malformed_json")), "{}", a.json);
    assert!(a.json["error"]["message"].as_str().unwrap().contains("application/json"));
    // A delivery id that cannot be part of an event id.
    let body = br#"{"zen":"Keep it simple."}"#;
    let a = post_github(&t, "github", "ping", "spaces are not ok", body).await;
    assert_eq!((a.status, &a.json["error"]["code"]), (400, &json!("invalid_delivery_id")), "{}", a.json);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(hook_inbox(&t).await.is_empty());
    t.stop().await;
}

#[tokio::test]
async fn redeliveries_and_reposts_are_stored_once() {
    let t = app(TWO_SOURCES).await;
    let push = fixture("push");
    // GitHub's "Redeliver" button: same delivery id, same body.
    let first = post_github(&t, "github", "push", "5d1e7a40-2763-11f0-8c1f-0e4d8a1b9f01", &push).await;
    let again = post_github(&t, "github", "push", "5d1e7a40-2763-11f0-8c1f-0e4d8a1b9f01", &push).await;
    assert_eq!((first.status, again.status), (202, 202));
    assert_eq!((&first.json["duplicate"], &again.json["duplicate"]), (&json!(false), &json!(true)));
    assert_eq!(first.json["event_id"], again.json["event_id"]);

    // The same signed request re-posted without a delivery id is the same event: the id is
    // the SHA-256 of what was signed, "<timestamp>.<body>".
    let body = br#"{"service":"billing","version":"41","status":"deployed"}"#;
    let now = now_secs();
    let one = post(&t, "deploys", &butler_headers(BUTLER_SECRET, now - 5, None, body), body.to_vec()).await;
    let two = post(&t, "deploys", &butler_headers(BUTLER_SECRET, now - 5, None, body), body.to_vec()).await;
    let id = butler_event_id("deploys", now - 5, body);
    assert_eq!((one.status, &one.json["event_id"]), (202, &json!(id)));
    assert_eq!((two.status, &two.json["event_id"], &two.json["duplicate"]), (202, &json!(id), &json!(true)));
    // The same body signed at another time is another request, so another event.
    let three = post(&t, "deploys", &butler_headers(BUTLER_SECRET, now, None, body), body.to_vec()).await;
    let later = butler_event_id("deploys", now, body);
    assert_eq!((three.status, &three.json["event_id"], &three.json["duplicate"]), (202, &json!(later), &json!(false)));

    tokio::time::sleep(Duration::from_millis(200)).await;
    let rows = settled(&t, 3).await;
    let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, [event_id("github", &push).as_str(), id.as_str(), later.as_str()]);
    t.stop().await;
}

#[tokio::test]
async fn over_the_rate_limit_gets_429_then_is_accepted_again() {
    let t = app(r#"
[[triggers]]
name = "deploys"
secret = "butler-hook-secret-88a2e0"
signature = "butler"
rate_limit_per_minute = 60
"#)
    .await;
    let send = |i: usize| {
        let body = format!(r#"{{"service":"api","build":{i}}}"#).into_bytes();
        let ts = now_secs();
        let headers = butler_headers(BUTLER_SECRET, ts, Some(&format!("build-{i}")), &body);
        (headers, body, ts)
    };
    // A burst of 60 is allowed; the bucket refills one a second, so keep going until refused.
    let mut accepted = 0;
    let mut refused = None;
    for i in 0..200 {
        let (headers, body, ts) = send(i);
        let a = post(&t, "deploys", &headers, body.clone()).await;
        match a.status {
            202 => accepted += 1,
            429 => {
                refused = Some((headers, body, ts, a));
                break;
            }
            s => panic!("unexpected {s}: {}", a.json),
        }
    }
    let (headers, body, ts, a) = refused.expect("the limit was never reached");
    assert!(accepted >= 60, "only {accepted} accepted before a 429");
    assert_eq!(a.json["error"]["code"], "rate_limited");
    let wait: u64 = a.retry_after.as_deref().expect("Retry-After").parse().unwrap();
    assert!((1..=2).contains(&wait), "Retry-After {wait}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let refused_id = butler_event_id("deploys", ts, &body);
    assert!(hook_inbox(&t).await.iter().all(|r| r.id != refused_id), "a refused request was stored");

    tokio::time::sleep(Duration::from_secs(wait) + Duration::from_millis(100)).await;
    // The same signed request, sent again once the bucket has a token (still inside the window).
    let a = post(&t, "deploys", &headers, body).await;
    assert_eq!((a.status, &a.json["event_id"]), (202, &json!(refused_id)));
    settled(&t, accepted + 1).await;
    t.stop().await;
}

#[tokio::test]
async fn a_signed_request_reposted_under_other_delivery_ids_is_one_notification() {
    let t = app(r#"
[[triggers]]
name = "deploys"
secret = "butler-hook-secret-88a2e0"
signature = "butler"
default = "notify"
target = "web:deploys"

[[triggers]]
name = "github"
secret = "gh-webhook-secret-4f1d9c"
signature = "github"
default = "notify"
target = "web:github"
"#)
    .await;
    // A captured Butler-scheme request: the delivery id header is not signed, so an attacker
    // may change it at will; the signed (timestamp, body) stays the same.
    let body = br#"{"service":"api","version":"7","status":"deployed"}"#;
    let ts = now_secs();
    let id = butler_event_id("deploys", ts, body);
    for (n, delivery) in ["orig-1", "replay-2", "replay-3", "replay-4", "replay-5", "replay-6"].iter().enumerate() {
        let a = post(&t, "deploys", &butler_headers(BUTLER_SECRET, ts, Some(delivery), body), body.to_vec()).await;
        assert_eq!((a.status, &a.json["event_id"]), (202, &json!(id)), "post {n}: {}", a.json);
        assert_eq!(a.json["duplicate"], json!(n > 0), "post {n}");
    }
    // GitHub's scheme has no timestamp: the body names the event, whatever X-GitHub-Delivery says.
    let push = fixture("push");
    for (n, delivery) in ["gh-1", "gh-2", "gh-3", "gh-4", "gh-5", "gh-6"].iter().enumerate() {
        let a = post_github(&t, "github", "push", delivery, &push).await;
        assert_eq!((a.status, &a.json["event_id"]), (202, &json!(event_id("github", &push))), "{}", a.json);
        assert_eq!(a.json["duplicate"], json!(n > 0), "github post {n}");
    }
    let rows = settled(&t, 2).await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(web_texts(&t, "deploys", 1).await.len(), 1);
    assert_eq!(web_texts(&t, "github", 1).await.len(), 1);
    // Nothing more arrives later.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!((t.messages("deploys").await.len(), t.messages("github").await.len()), (1, 1));
    t.stop().await;
}

/// Issue 18 point 4: a source's rate limit holds across replicas. Two routers (two replicas)
/// on one shared gate accept the source's burst once between them, whichever gets the
/// requests; with gates of their own each would accept a whole burst.
#[tokio::test]
async fn a_sources_limit_is_shared_by_the_replicas() {
    use butler::channel::limit::Gate;
    use tower::ServiceExt;
    let source = || butler_webhook::Source {
        name: "deploys".into(),
        secret: BUTLER_SECRET.into(),
        scheme: butler_webhook::Scheme::Butler,
        rate_limit_per_minute: 10,
    };
    // (one shared gate, requests accepted out of 30 alternating between the two replicas)
    for (shared, want) in [(true, 10), (false, 20)] {
        let db = crate::support::db::SqliteTestDb::new();
        let store = butler::store::connect(&db.url, 2).await.unwrap();
        store.migrate().await.unwrap();
        let ingress: std::sync::Arc<dyn butler::channel::Ingress> = std::sync::Arc::new(
            butler::ingress::InboxIngress::new(store.clone(), std::sync::Arc::new(tokio::sync::Notify::new())),
        );
        let gates =
            if shared { crate::support::gates::replicas(2).await.0 } else { vec![Gate::local(), Gate::local()] };
        let replicas: Vec<axum::Router> =
            gates.iter().map(|g| butler_webhook::routes(vec![source()], ingress.clone(), g.clone())).collect();
        let mut accepted = 0;
        for i in 0..30 {
            let body = format!(r#"{{"service":"api","build":{i}}}"#).into_bytes();
            let mut req = axum::http::Request::post("/hooks/deploys");
            for (name, value) in butler_headers(BUTLER_SECRET, now_secs(), Some(&format!("build-{i}")), &body) {
                req = req.header(name, value);
            }
            let answer =
                replicas[i % 2].clone().oneshot(req.body(axum::body::Body::from(body)).unwrap()).await.unwrap();
            match answer.status().as_u16() {
                202 => accepted += 1,
                429 => {}
                s => panic!("request {i}: {s}"),
            }
        }
        assert_eq!(accepted, want, "shared gate: {shared}");
    }
}

/// Issue 18 point 4 with real processes: two `butler serve` replicas on one Postgres and one
/// Redis accept a webhook source's burst once between them, requests alternating between them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_serve_replicas_accept_a_sources_burst_once() {
    let triggers = "[[triggers]]\nname = \"deploys\"\nsecret = \"butler-hook-secret-88a2e0\"\n\
                    signature = \"butler\"\nrate_limit_per_minute = 10\n";
    let mut set = crate::support::cluster::Replicas::new(2, 2000, triggers).await;
    set.start_all().await;
    let client = reqwest::Client::new();
    // (status, how many of the 30 requests got it)
    let mut got = std::collections::BTreeMap::new();
    for i in 0..30 {
        let body = format!(r#"{{"service":"api","build":{i}}}"#).into_bytes();
        let headers = butler_headers(BUTLER_SECRET, now_secs(), Some(&format!("build-{i}")), &body);
        let mut req = client.post(format!("{}/hooks/deploys", set.nodes[i % 2].base())).body(body);
        for (name, value) in headers {
            req = req.header(name, value);
        }
        *got.entry(req.send().await.unwrap().status().as_u16()).or_insert(0) += 1;
    }
    assert_eq!(got, std::collections::BTreeMap::from([(202, 10), (429, 20)]), "{}", set.logs());
}

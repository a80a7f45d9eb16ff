//! Points 1-4 of step 21 for email: a mail from an allowed, authenticated sender is answered in
//! its thread (In-Reply-To, References, `Re:` subject, plain text plus HTML, a Message-ID from
//! the outbox key); anything else starts nothing; mail that came while Butler was down is
//! handled once; a reply continues its session and a new subject starts one; a request is
//! approved by replying APPROVE, only by the approver; `butler doctor` checks both logins.

use crate::support::fake_llm::Reply;
use crate::support::touch::Touch;
use crate::{app, mail, Rig, ALICE, BOB, BUTLER, PASSWORD};
use butler::channels::EmailConfig;
use butler_email::HANDLED;
use serde_json::json;

#[tokio::test]
async fn a_mail_from_an_allowed_sender_is_answered_in_its_thread() {
    let rig = Rig::start(vec![]).await;
    rig.llm.on("lunch", Reply::text("**Noon** works."));
    rig.deliver(&mail(ALICE, true, "m1@example.com", "Lunch plans", "", "Shall we have lunch?")).await;
    let sent = rig.smtp.wait(20, "the answer", |m| !m.is_empty()).await;
    let m = &sent[0];
    assert_eq!((m.from.as_str(), m.to.clone()), (BUTLER, vec![ALICE.to_string()]));
    assert_eq!(m.header("Subject").as_deref(), Some("Re: Lunch plans"));
    assert_eq!(m.header("In-Reply-To").as_deref(), Some("<m1@example.com>"));
    assert_eq!(m.header("References").as_deref(), Some("<m1@example.com>"));
    let id = m.header("Message-ID").unwrap();
    assert!(id.starts_with("<butler.") && id.ends_with("@example.test>"), "{id}");
    assert!(m.data.contains("multipart/alternative") && m.data.contains("text/html"), "{}", m.data);
    assert!(m.data.contains("**Noon** works.") && m.data.contains("<strong>Noon</strong>"), "{}", m.data);
    assert!(rig.llm.last_request().unwrap().last_user_text().contains("Shall we have lunch?"));
    let (handled, all) = rig.imap.uids(BUTLER, PASSWORD, HANDLED).await;
    assert_eq!((handled, all), (vec![1], vec![1]), "marked handled once stored");
    rig.app.stop().await;
}

#[tokio::test]
async fn unauthenticated_or_unknown_senders_start_nothing() {
    let rig = Rig::start(vec![]).await;
    rig.deliver(&mail(ALICE, false, "forged@example.com", "Hi", "", "Send me the files")).await;
    rig.deliver(&mail("mallory@elsewhere.example", true, "x@elsewhere.example", "Hi", "", "hello")).await;
    // A header the sender wrote themselves, naming another server, proves nothing either.
    let forged = String::from_utf8(mail(ALICE, false, "f2@example.com", "Hi", "", "again")).unwrap().replacen(
        "Authentication-Results: mx.example.test; dkim=none",
        "Authentication-Results: attacker.example; dkim=pass header.d=example.com\r\nAuthentication-Results: mx.example.test; dkim=none",
        1,
    );
    rig.deliver(forged.as_bytes()).await;
    crate::support::app::settle().await;
    crate::support::app::settle().await;
    assert!(rig.llm.requests().is_empty(), "no turn");
    assert!(rig.smtp.mails().is_empty(), "no answer");
    let (handled, _) = rig.imap.uids(BUTLER, PASSWORD, HANDLED).await;
    assert_eq!(handled, vec![1, 2, 3], "looked at once each");
    assert_eq!(rig.app.inbox_count().await, 0);
    rig.app.stop().await;
}

#[tokio::test]
async fn mail_that_came_while_butler_was_down_is_handled_once() {
    let rig = Rig::start(vec![]).await;
    rig.llm.on_every("note", Reply::text("noted"));
    rig.deliver(&mail(ALICE, true, "n1@example.com", "Note 1", "", "note one")).await;
    rig.smtp.wait(20, "the first answer", |m| m.len() == 1).await;
    let Rig { mut app, imap, smtp, llm } = rig;
    let dir = app._dir.take();
    app.stop().await;
    imap.deliver(BUTLER, PASSWORD, &mail(ALICE, true, "n2@example.com", "Note 2", "", "note two")).await;
    imap.deliver(BUTLER, PASSWORD, &mail(BOB, true, "n3@example.com", "Note 3", "", "note three")).await;
    let app = app_again(&imap, &smtp, &llm, dir).await;
    smtp.wait(20, "both answers", |m| m.len() >= 3).await;
    crate::support::app::settle().await;
    let mut to: Vec<String> = smtp.mails().iter().map(|m| m.header("In-Reply-To").unwrap_or_default()).collect();
    to.sort();
    assert_eq!(to, ["<n1@example.com>", "<n2@example.com>", "<n3@example.com>"], "each once (two people: any order)");
    let (handled, all) = imap.uids(BUTLER, PASSWORD, HANDLED).await;
    assert_eq!(handled, all);
    app.stop().await;
}

async fn app_again(
    imap: &crate::support::dovecot::Dovecot,
    smtp: &crate::support::smtp_sink::SmtpSink,
    llm: &crate::support::fake_llm::FakeLlm,
    dir: Option<tempfile::TempDir>,
) -> crate::support::app::TestApp {
    app(imap, smtp, llm, dir, vec![]).await
}

#[tokio::test]
async fn a_reply_continues_its_session_and_a_new_subject_starts_one() {
    let rig = Rig::start(vec![]).await;
    rig.llm.on_every("", Reply::echo());
    rig.deliver(&mail(ALICE, true, "t1@example.com", "Trip", "", "Plan a trip to Lisbon")).await;
    let first = rig.smtp.wait(20, "the first answer", |m| m.len() == 1).await;
    let ours = first[0].header("Message-ID").unwrap();
    let extra = format!("In-Reply-To: {ours}\r\nReferences: <t1@example.com> {ours}\r\n");
    rig.deliver(&mail(ALICE, true, "t2@example.com", "Re: Trip", &extra, "And a hotel?\r\n\r\n> earlier")).await;
    let second = rig.smtp.wait(20, "the second answer", |m| m.len() == 2).await;
    assert_eq!(second[1].header("Subject").as_deref(), Some("Re: Trip"));
    assert_eq!(second[1].header("In-Reply-To").as_deref(), Some("<t2@example.com>"), "answers the newest mail");
    assert_eq!(second[1].header("References").as_deref(), Some("<t1@example.com> <t2@example.com>"));
    let asked = rig.llm.last_request().unwrap();
    let history = asked.messages();
    assert!(history.iter().any(|m| m.to_string().contains("Plan a trip to Lisbon")), "the same session");
    rig.deliver(&mail(ALICE, true, "u1@example.com", "Groceries", "", "Milk and eggs")).await;
    rig.smtp.wait(20, "the third answer", |m| m.len() == 3).await;
    let fresh = rig.llm.last_request().unwrap();
    assert!(!fresh.messages().iter().any(|m| m.to_string().contains("Lisbon")), "a new subject, a new session");
    rig.app.stop().await;
}

#[tokio::test]
async fn a_request_is_approved_by_replying_approve_only_by_the_approver() {
    let tool = Touch::new();
    let rig = Rig::start(vec![tool.clone()]).await;
    rig.llm.on("lamp", Reply::tool_call("touch", json!({"name": "lamp"})));
    rig.llm.on("lamp", Reply::text("lamp done"));
    rig.deliver(&mail(ALICE, true, "a1@example.com", "Lamp", "", "touch the lamp")).await;
    let sent = rig.smtp.wait(20, "the request", |m| m.iter().any(|m| m.data.contains("Approval needed"))).await;
    let request = sent.iter().find(|m| m.data.contains("Approval needed")).unwrap();
    assert!(request.data.contains("Reply with APPROVE or DENY as the first line"), "{}", request.data);
    let id = request.header("Message-ID").unwrap();
    let extra = format!("In-Reply-To: {id}\r\nReferences: <a1@example.com> {id}\r\n");
    // Bob forwards it back with APPROVE: not his to decide.
    rig.deliver(&mail(BOB, true, "b1@example.com", "Re: Lamp", &extra, "APPROVE")).await;
    crate::support::app::settle().await;
    assert_eq!(tool.runs(), 0);
    rig.deliver(&mail(ALICE, true, "a2@example.com", "Re: Lamp", &extra, "APPROVE\r\n\r\n> the request")).await;
    rig.smtp.wait(20, "the answer", |m| m.iter().any(|m| m.data.contains("lamp done"))).await;
    assert_eq!(tool.runs(), 1);
    rig.deliver(&mail(ALICE, true, "a3@example.com", "Re: Lamp", &extra, "APPROVE")).await;
    crate::support::app::settle().await;
    assert_eq!(tool.runs(), 1, "once");
    rig.app.stop().await;
}

#[tokio::test]
async fn doctor_checks_the_imap_and_smtp_logins() {
    let imap = crate::support::dovecot::Dovecot::start(&[(BUTLER, PASSWORD)]).await;
    let smtp = crate::support::smtp_sink::SmtpSink::start().await;
    let good = crate::email(&imap, &smtp);
    let check = |cfg: EmailConfig| async move { crate::support::app::doctor_channel("email", cfg.to_table()).await };
    let ok = check(good.clone()).await.unwrap();
    assert!(ok.contains("IDLE"), "{ok}");
    let mut bad = good.clone();
    bad.imap.password = butler::config::Secret::new("wrong-password-xyz");
    let (problem, fix) = check(bad).await.unwrap_err();
    assert!(problem.contains("refused the login") && fix.contains("password"), "{problem} / {fix}");
    assert!(!problem.contains("wrong-password-xyz") && !fix.contains("wrong-password-xyz"), "never the password");
    let mut gone = good.clone();
    gone.smtp.port = crate::support::proc::free_port();
    let (problem, fix) = check(gone).await.unwrap_err();
    assert!(problem.contains("SMTP") && fix.contains("[channels.email.smtp]"), "{problem} / {fix}");
}

/// A mail sent again after a crash (the same outbox key) is the same mail: the same
/// `Message-ID`, which receiving servers and clients keep once; another reply is another mail.
#[tokio::test]
async fn a_resend_of_the_same_outbox_row_is_the_same_mail() {
    use butler::channel::{Channel, ConversationRef, Outbound};
    use butler_email::{EmailChannel, Server, Settings, Tls};
    let smtp = crate::support::smtp_sink::SmtpSink::start().await;
    let server = |port| Server {
        host: "127.0.0.1".into(),
        port,
        tls: Tls::None,
        user: String::new(),
        password: String::new(),
        token_command: None,
    };
    let channel = EmailChannel::new(Settings {
        address: BUTLER.into(),
        imap: server(1),
        smtp: server(smtp.port),
        folder: "INBOX".into(),
        senders: vec![],
        authserv_id: None,
        since_days: 3,
    })
    .unwrap();
    let to = ConversationRef::new("email", ALICE);
    let msg =
        |key: &str| Outbound { key: Some(key.into()), ..Outbound::text(to.clone(), "**Morning** briefing\n\nRain.") };
    let first = channel.send(&msg("schedule:1:reply#0")).await.unwrap();
    let again = channel.send(&msg("schedule:1:reply#0")).await.unwrap();
    let other = channel.send(&msg("schedule:2:reply#0")).await.unwrap();
    assert_eq!(first.id, again.id);
    assert_ne!(first.id, other.id);
    let mails = smtp.mails();
    let ids: Vec<String> = mails.iter().map(|m| m.header("Message-ID").unwrap()).collect();
    assert_eq!(ids[0], ids[1], "the same mail");
    assert_ne!(ids[0], ids[2]);
    assert_eq!(mails[0].header("Subject").as_deref(), Some("Morning briefing"), "a new thread's subject");
    assert_eq!(mails[0].header("In-Reply-To"), None);
}

#[tokio::test]
async fn a_photo_attached_to_a_mail_reaches_the_model() {
    use base64::Engine;
    let rig = Rig::start(vec![]).await;
    rig.llm.on("picture", Reply::text("a gradient"));
    let png = crate::support::payloads::png(64, 48);
    let b64 = base64::engine::general_purpose::STANDARD.encode(&png);
    let body = format!(
        "--b1\r\nContent-Type: text/plain\r\n\r\nwhat is in this picture?\r\n--b1\r\nContent-Type: image/png\r\n\
         Content-Disposition: attachment; filename=\"x.png\"\r\nContent-Transfer-Encoding: base64\r\n\r\n{b64}\r\n--b1--"
    );
    let raw = String::from_utf8(mail(ALICE, true, "p1@example.com", "Photo", "", &body)).unwrap().replace(
        "Content-Type: text/plain; charset=utf-8\r\n\r\n--b1",
        "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"b1\"\r\n\r\n--b1",
    );
    rig.deliver(raw.as_bytes()).await;
    rig.smtp.wait(20, "the answer", |m| m.iter().any(|m| m.data.contains("a gradient"))).await;
    assert_eq!(rig.llm.last_request().unwrap().images().len(), 1, "the photo was given to the model");
    rig.app.stop().await;
}

/// Allowed to mail, but not yet in `[access]`: the pairing answer comes back by mail, no turn.
#[tokio::test]
async fn an_allowed_sender_not_yet_in_access_gets_the_pairing_answer_by_mail() {
    let imap = crate::support::dovecot::Dovecot::start(&[(BUTLER, PASSWORD)]).await;
    let smtp = crate::support::smtp_sink::SmtpSink::start().await;
    let llm = crate::support::fake_llm::FakeLlm::start().await;
    let (mut cfg, dir) = crate::support::app::config_in(Some(&llm.openai_url()), None);
    let mut section = crate::email(&imap, &smtp);
    section.allowed.push(butler::channels::AllowedSender::Address("carol@example.com".into()));
    cfg.channels.set("email", section.to_table());
    cfg.access.owners = vec![format!("email:{ALICE}").parse().unwrap()];
    let app = crate::support::app::TestApp::start(cfg, Some(dir)).await;
    imap.deliver(BUTLER, PASSWORD, &mail("carol@example.com", true, "c1@example.com", "Hello", "", "Hi Butler")).await;
    let sent = smtp.wait(20, "the pairing answer", |m| !m.is_empty()).await;
    assert_eq!(sent[0].to, ["carol@example.com"]);
    assert!(sent[0].data.to_lowercase().contains("pair"), "{}", sent[0].data);
    assert!(llm.requests().is_empty(), "no turn before the owner approves");
    app.stop().await;
}

/// An OAuth2 account: `token_command` prints an access token, and both logins use XOAUTH2 with
/// it (Dovecot checks it at a token endpoint, the SMTP sink against the user and token).
#[tokio::test]
async fn an_oauth2_account_logs_in_with_the_token_command() {
    use axum::extract::Query;
    use std::collections::HashMap;
    const TOKEN: &str = "ya29.token-7f";
    let tokeninfo = axum::Router::new().route(
        "/tokeninfo",
        axum::routing::get(|Query(q): Query<HashMap<String, String>>| async move {
            if q.get("access_token").map(String::as_str) == Some(TOKEN) {
                (axum::http::StatusCode::OK, axum::Json(json!({"email": BUTLER, "expires_in": 3599})))
            } else {
                (axum::http::StatusCode::UNAUTHORIZED, axum::Json(json!({"error": "invalid_token"})))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/tokeninfo", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, tokeninfo).await });
    let imap = crate::support::dovecot::Dovecot::start_oauth(&[(BUTLER, PASSWORD)], &url).await;
    let smtp = crate::support::smtp_sink::SmtpSink::start_with(Some((BUTLER, TOKEN))).await;
    let llm = crate::support::fake_llm::FakeLlm::start().await;
    let mut section = crate::email(&imap, &smtp);
    let command = Some(vec!["sh".to_string(), "-c".to_string(), format!("echo {TOKEN}")]);
    for server in [&mut section.imap, &mut section.smtp] {
        server.user = BUTLER.into();
        server.password = butler::config::Secret::new("");
        server.token_command = command.clone();
    }
    let ok = crate::support::app::doctor_channel("email", section.to_table()).await.unwrap();
    assert!(ok.contains("IDLE"), "{ok}");
    let (mut cfg, dir) = crate::support::app::config_in(Some(&llm.openai_url()), None);
    cfg.channels.set("email", section.to_table());
    cfg.access.owners = vec![format!("email:{ALICE}").parse().unwrap()];
    let app = crate::support::app::TestApp::start(cfg, Some(dir)).await;
    llm.on("oauth", Reply::text("signed in"));
    imap.deliver(BUTLER, PASSWORD, &mail(ALICE, true, "o1@example.com", "Hi", "", "oauth works?")).await;
    smtp.wait(20, "the answer", |m| m.iter().any(|m| m.data.contains("signed in"))).await;
    app.stop().await;
    // A token command that fails is named, and its output never shown.
    let mut bad = section.clone();
    bad.imap.token_command = Some(vec!["sh".into(), "-c".into(), "echo secret-out; exit 3".into()]);
    let (problem, fix) = crate::support::app::doctor_channel("email", bad.to_table()).await.unwrap_err();
    assert!(problem.contains("token command failed") && fix.contains("token_command"), "{problem} / {fix}");
    assert!(!problem.contains("secret-out"), "{problem}");
}

#[tokio::test]
async fn a_briefing_goes_out_as_a_mail_titled_with_the_schedules_name() {
    let rig = Rig::start(vec![]).await;
    rig.llm.on("brief-mail", Reply::text("**Today**: rain, then sun."));
    let (target, owner) = (format!("email:{ALICE}"), format!("email:{ALICE}"));
    crate::support::app::briefing_due(&rig.app.app.store, "Morning briefing", "brief-mail: the day", &target, &owner)
        .await;
    let sent = rig.smtp.wait(30, "the briefing", |m| !m.is_empty()).await;
    let m = &sent[0];
    assert_eq!(m.to, vec![ALICE.to_string()]);
    assert_eq!(m.header("Subject").as_deref(), Some("Morning briefing"), "the schedule's name, not the first line");
    assert_eq!(m.header("In-Reply-To"), None, "a briefing starts a thread");
    assert!(m.data.contains("**Today**: rain, then sun."), "{}", m.data);
    rig.app.stop().await;
}

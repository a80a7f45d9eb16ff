//! Mails as a receiving server stores them -> events (or why none), as tables.

use super::*;

const ALICE: &str = "alice@example.com";

fn rules(proof: Proof) -> Rules {
    Rules {
        address: "butler@example.test".into(),
        senders: vec![Sender { pattern: ALICE.into(), proof }, Sender { pattern: "@corp.example".into(), proof }],
        authserv_id: Some("mx.example.test".into()),
    }
}

fn raw(from: &str, results: &[&str], extra: &str, body: &str) -> Vec<u8> {
    let mut m = String::new();
    for r in results {
        m.push_str(&format!("Authentication-Results: {r}\r\n"));
    }
    m.push_str(&format!(
        "From: Alice <{from}>\r\nTo: butler@example.test\r\nSubject: Lunch plans\r\nMessage-ID: <m1@example.com>\r\n\
         Date: Sat, 5 Dec 2026 10:00:00 +0000\r\n{extra}Content-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n"
    ));
    m.into_bytes()
}

const PASS: &str =
    "mx.example.test; dkim=pass header.d=example.com header.s=s1; spf=pass smtp.mailfrom=alice@example.com";

#[test]
fn only_authenticated_allowed_senders_are_events() {
    // (from, Authentication-Results headers (topmost first), proof asked, an event?)
    let cases: Vec<(&str, Vec<&str>, Proof, bool)> = vec![
        (ALICE, vec![PASS], Proof::DkimOrSpf, true),
        (
            ALICE,
            vec!["mx.example.test; dkim=fail header.d=example.com; spf=pass smtp.mailfrom=example.com"],
            Proof::DkimOrSpf,
            true,
        ),
        (
            ALICE,
            vec!["mx.example.test; dkim=fail header.d=example.com; spf=pass smtp.mailfrom=example.com"],
            Proof::Dkim,
            false,
        ),
        (
            ALICE,
            vec!["mx.example.test; dkim=pass header.d=evil.example; spf=fail smtp.mailfrom=example.com"],
            Proof::DkimOrSpf,
            false,
        ),
        // A header the sender wrote themselves names another server: not the receiving server's.
        (ALICE, vec!["attacker.example; dkim=pass header.d=example.com"], Proof::DkimOrSpf, false),
        (ALICE, vec![], Proof::DkimOrSpf, false),
        (ALICE, vec![], Proof::None, true),
        ("bob@corp.example", vec!["mx.example.test; spf=pass smtp.mailfrom=bob@corp.example"], Proof::Spf, true),
        ("mallory@example.com", vec![PASS], Proof::DkimOrSpf, false),
        ("butler@example.test", vec![PASS], Proof::None, false),
    ];
    for (from, results, proof, want) in cases {
        let got = mail(&raw(from, &results, "", "hello"), 7, 1, &rules(proof));
        assert_eq!(got.is_ok(), want, "{from} {results:?} {proof:?}: {:?}", got.err());
    }
}

#[test]
fn threads_text_and_answers() {
    let r = rules(Proof::None);
    // A new mail: its own id is the thread.
    let m = mail(&raw(ALICE, &[], "", "Where shall we eat?"), 7, 1, &r).unwrap();
    assert_eq!(m.event.conversation.to_string(), "email:alice@example.com/m1@example.com");
    assert_eq!(m.event.id.0, "email:msg:m1@example.com");
    assert_eq!(m.event.actor.identity.to_string(), "email:alice@example.com");
    assert_eq!((m.event.text(), m.subject.as_str()), (Some("Where shall we eat?"), "Lunch plans"));
    // A reply: the thread's root, the quote and the signature cut off.
    let extra = "In-Reply-To: <b2@example.test>\r\nReferences: <root@example.com> <b2@example.test>\r\n";
    let body = "Yes, at noon.\r\n\r\nOn Sat, 5 Dec 2026, Butler wrote:\r\n> Shall I book?\r\n";
    let m = mail(&raw(ALICE, &[], extra, body), 7, 2, &r).unwrap();
    assert_eq!(m.event.conversation.thread.as_deref(), Some("root@example.com"));
    assert_eq!((m.event.text(), m.event.reply_to.as_deref()), (Some("Yes, at noon."), Some("b2@example.test")));
    let signed = mail(&raw(ALICE, &[], "", "Thanks!\r\n-- \r\nAlice\r\n555-1234"), 7, 3, &r).unwrap();
    assert_eq!(signed.event.text(), Some("Thanks!"));
    // APPROVE / DENY in a reply's first line answer the request replied to.
    for (first, want) in [("APPROVE", "#yes"), ("deny please", "#no")] {
        let m = mail(&raw(ALICE, &[], extra, &format!("{first}\r\n\r\n> the request")), 7, 4, &r).unwrap();
        match m.event.body {
            EventBody::Action { action, message, .. } => {
                assert_eq!((action.as_str(), message.as_deref()), (want, Some("b2@example.test")))
            }
            other => panic!("{other:?}"),
        }
    }
    // Without a Message-ID the UID names it.
    let bare = String::from_utf8(raw(ALICE, &[], "", "hi")).unwrap().replace("Message-ID: <m1@example.com>\r\n", "");
    assert_eq!(mail(bare.as_bytes(), 7, 9, &r).unwrap().event.id.0, "email:uid:7:9");
}

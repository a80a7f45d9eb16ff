//! `butler init` makes the person running it the owner (issue 30, point 3): the owner code it
//! prints (made by the same `owner_code` as `butler pair owner`), sent as `/link CODE` from a
//! Telegram account nobody configured, makes that account the owner, one person with the
//! terminal and the local web page; its next message is answered by the model, not paired. A
//! second account sending the same code gets nothing of it: the code is spent.

use crate::support::fake_telegram::updates::dm;
use crate::Tg;
use butler::store::UserRole;
use butler::triage::access::owner_code;

/// Nobody configured: not an owner, not allowed.
const ME: i64 = 4242;
const STRANGER: i64 = 5151;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_code_init_prints_makes_your_own_account_the_owner() {
    let tg = Tg::start_with(
        |cfg| {
            cfg.access.owners.clear();
            cfg.access.allow.clear();
        },
        vec![],
    )
    .await;
    tg.polling().await;
    let store = &tg.app.app.store;
    let code = owner_code((&**store, &**store), "UTC").await.expect("a code");

    tg.fake.push(dm(ME, 1, &format!("/link {code}")));
    let said = tg.texts(ME, 1).await;
    assert!(said[0].contains("Linked") && said[0].contains("cli:local"), "{said:?}");
    let me = butler::channel::Identity::new("telegram", ME.to_string());
    let user = store.identity_user(&me).await.unwrap().expect("linked");
    assert_eq!((user.id.as_str(), user.role), ("local", UserRole::Owner), "one person with the terminal");
    let web = store.identity_user(&butler::channel::Identity::new("web", "local")).await.unwrap().expect("web:local");
    assert_eq!(web.id, "local", "and with the local web page");

    // The owner's next message goes to the model: no pairing answer.
    tg.fake.push(dm(ME, 2, "hello"));
    let said = tg.texts(ME, 2).await;
    assert_eq!(said[1], "echo: hello", "{said:?}");

    // The code is spent: someone else sending it is told it is wrong and stays out.
    tg.fake.push(dm(STRANGER, 1, &format!("/link {code}")));
    let said = tg.texts(STRANGER, 1).await;
    assert!(!said[0].contains("Linked"), "{said:?}");
    let stranger = butler::channel::Identity::new("telegram", STRANGER.to_string());
    assert!(store.identity_user(&stranger).await.unwrap().is_none_or(|u| u.role < UserRole::Member));
    tg.stop().await;
}

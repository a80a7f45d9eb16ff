//! A real Dovecot IMAP server for the email tests (Debian's `dovecot-imapd`, which `tests/run`
//! installs): one instance per test in its own folder, on a free port on 127.0.0.1, plain text
//! (no TLS), users from a passwd file, Maildir mailboxes; stopped when dropped. Mail is put in
//! with IMAP `APPEND`, as a receiving server delivers it, and read back with a bare IMAP
//! conversation.
//!
//! It must never touch a system Dovecot or a port it did not pick.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

pub struct Dovecot {
    pub port: u16,
    dir: tempfile::TempDir,
    child: Child,
}

/// The uid and gid mail is stored as: ours, or the `dovecot` user's when we are root (Dovecot
/// refuses mail access as root).
fn mail_ids() -> (u32, u32) {
    // SAFETY: getuid/getgid only read the process's ids.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    if uid != 0 {
        return (uid, gid);
    }
    let id = |flag: &str| {
        let out = Command::new("id").args([flag, "dovecot"]).output().expect("id");
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse::<u32>()
            .expect("the dovecot user (apt-get install dovecot-imapd)")
    };
    (id("-u"), id("-g"))
}

impl Dovecot {
    /// Starts Dovecot with `users` ((address, password)).
    pub async fn start(users: &[(&str, &str)]) -> Self {
        Self::start_with(users, None).await
    }

    /// Starts Dovecot taking OAuth2 access tokens (XOAUTH2) checked at `tokeninfo_url` (its
    /// answer's `email` is the user), beside the password `users`.
    pub async fn start_oauth(users: &[(&str, &str)], tokeninfo_url: &str) -> Self {
        Self::start_with(users, Some(tokeninfo_url)).await
    }

    async fn start_with(users: &[(&str, &str)], tokeninfo: Option<&str>) -> Self {
        let binary = ["/usr/sbin/dovecot", "/usr/local/sbin/dovecot"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.exists())
            .expect("Dovecot is not installed: run tests/run (it installs dovecot-imapd)");
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for sub in ["run", "state", "home"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        use std::os::unix::fs::PermissionsExt;
        for p in [root.to_path_buf(), root.join("run"), root.join("home")] {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o777)).unwrap();
        }
        let passwd: String = users.iter().map(|(u, p)| format!("{u}:{{PLAIN}}{p}\n")).collect();
        std::fs::write(root.join("passwd"), passwd).unwrap();
        let port = crate::support::proc::free_port();
        let (uid, gid) = mail_ids();
        let (login, internal) = if unsafe { libc::getuid() } == 0 {
            ("dovenull".to_string(), "dovecot".to_string())
        } else {
            let me = std::env::var("USER").unwrap_or_else(|_| "nobody".into());
            (me.clone(), me)
        };
        let r = root.display();
        let (mechanisms, oauth) = match tokeninfo {
            Some(url) => {
                std::fs::write(
                    root.join("oauth2.conf.ext"),
                    format!("tokeninfo_url = {url}?access_token=\nusername_attribute = email\n"),
                )
                .unwrap();
                (
                    "plain login xoauth2",
                    format!("passdb {{\n  driver = oauth2\n  mechanisms = xoauth2\n  args = {r}/oauth2.conf.ext\n}}\n"),
                )
            }
            None => ("plain login", String::new()),
        };
        let conf = format!(
            "base_dir = {r}/run\nstate_dir = {r}/state\nlog_path = {r}/dovecot.log\nprotocols = imap\nlisten = 127.0.0.1\n\
             ssl = no\ndisable_plaintext_auth = no\nauth_mechanisms = {mechanisms}\ndefault_login_user = {login}\n\
             default_internal_user = {internal}\nfirst_valid_uid = 1\nfirst_valid_gid = 1\n{oauth}\
             passdb {{\n  driver = passwd-file\n  args = scheme=PLAIN username_format=%u {r}/passwd\n}}\n\
             userdb {{\n  driver = static\n  args = uid={uid} gid={gid} home={r}/home/%u\n}}\n\
             mail_location = maildir:~/Maildir\n\
             service imap-login {{\n  chroot =\n  inet_listener imap {{\n    address = 127.0.0.1\n    port = {port}\n  }}\n  \
             inet_listener imaps {{\n    port = 0\n  }}\n}}\nservice anvil {{\n  chroot =\n}}\n"
        );
        std::fs::write(root.join("dovecot.conf"), conf).unwrap();
        let child = Command::new(binary)
            .args(["-F", "-c"])
            .arg(root.join("dovecot.conf"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start dovecot");
        let me = Self { port, dir, child };
        for _ in 0..200 {
            if TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return me;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("Dovecot did not listen on {port}; its log:\n{}", me.log());
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("dovecot.log")).unwrap_or_default()
    }

    /// Runs IMAP `commands` (without tags; a `{literal}` is sent after the server's `+`) as
    /// `user`; every untagged line the server answered.
    async fn converse(&self, user: &str, password: &str, commands: &[(String, Option<Vec<u8>>)]) -> Vec<String> {
        let tcp = TcpStream::connect(("127.0.0.1", self.port)).await.unwrap();
        let (read, mut write) = tcp.into_split();
        let mut lines = BufReader::new(read).lines();
        let mut seen = Vec::new();
        lines.next_line().await.unwrap().expect("greeting");
        let mut all = vec![(format!("LOGIN \"{user}\" \"{password}\""), None)];
        all.extend(commands.iter().cloned());
        all.push(("LOGOUT".into(), None));
        for (n, (command, literal)) in all.into_iter().enumerate() {
            let tag = format!("t{n}");
            write.write_all(format!("{tag} {command}\r\n").as_bytes()).await.unwrap();
            if let Some(bytes) = literal {
                let go = lines.next_line().await.unwrap().unwrap();
                assert!(go.starts_with('+'), "{go}");
                write.write_all(&bytes).await.unwrap();
                write.write_all(b"\r\n").await.unwrap();
            }
            loop {
                let line = lines.next_line().await.unwrap().unwrap_or_default();
                if line.starts_with(&format!("{tag} ")) {
                    assert!(line.starts_with(&format!("{tag} OK")), "{command}: {line}\n{}", self.log());
                    break;
                }
                seen.push(line);
            }
        }
        seen
    }

    /// Delivers `raw` into `user`'s INBOX.
    pub async fn deliver(&self, user: &str, password: &str, raw: &[u8]) {
        let append = format!("APPEND INBOX {{{}}}", raw.len());
        self.converse(user, password, &[(append, Some(raw.to_vec()))]).await;
    }

    /// The UIDs in `user`'s INBOX carrying `keyword`, and all UIDs.
    pub async fn uids(&self, user: &str, password: &str, keyword: &str) -> (Vec<u32>, Vec<u32>) {
        let lines = self
            .converse(
                user,
                password,
                &[
                    ("SELECT INBOX".into(), None),
                    (format!("UID SEARCH KEYWORD {keyword}"), None),
                    ("UID SEARCH ALL".into(), None),
                ],
            )
            .await;
        let searches: Vec<Vec<u32>> = lines
            .iter()
            .filter_map(|l| l.strip_prefix("* SEARCH"))
            .map(|rest| rest.split_whitespace().filter_map(|n| n.parse().ok()).collect())
            .collect();
        (searches.first().cloned().unwrap_or_default(), searches.get(1).cloned().unwrap_or_default())
    }
}

impl Drop for Dovecot {
    fn drop(&mut self) {
        // SIGTERM: the master stops its children too.
        // SAFETY: signalling our own child by its pid.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let _ = self.child.wait();
    }
}

//! The hard deny list: every credential path, `..` and `~` forms, symlinks, parents, command
//! lines, `file:` URLs, Butler's own files, and that nothing (config, mode, context, grant) gets
//! past it. Policies get a temporary HOME; the one test of `Policy::new` only uses paths that
//! lie outside any HOME, so the real one is never looked at.

use super::*;
use crate::config::{ContextKind, Mode, PermissionContext};

#[test]
fn every_credential_path_is_denied() {
    let f = Fixture::new(wide_open());
    let write = spec("file_write", false);
    // (path below HOME or absolute, what the reason shows)
    let cases: &[(&str, &str)] = &[
        ("~/.ssh", "~/.ssh is a credential path"),
        ("~/.ssh/id_rsa", "~/.ssh/id_rsa is a credential path"),
        ("~/.ssh/config", "~/.ssh/config is a credential path"),
        ("~/.ssh/authorized_keys", "~/.ssh/authorized_keys"),
        ("~/.aws/credentials", "~/.aws/credentials is a credential path"),
        ("~/.aws/config", "~/.aws/config"),
        ("~/.kube/config", "~/.kube/config"),
        ("~/.gnupg", "~/.gnupg"),
        ("~/.gnupg/pubring.kbx", "~/.gnupg/pubring.kbx"),
        ("~/.docker/config.json", "~/.docker/config.json"),
        ("~/.netrc", "~/.netrc"),
        ("~/.config/gh/hosts.yml", "~/.config/gh/hosts.yml"),
        ("~/.git-credentials", "~/.git-credentials"),
        ("~/.config/gcloud", "~/.config/gcloud is a credential path"),
        (
            "~/.config/gcloud/application_default_credentials.json",
            "~/.config/gcloud/application_default_credentials.json",
        ),
        ("~/.config/gcloud/credentials.db", "~/.config/gcloud/credentials.db"),
        ("~/.azure", "~/.azure is a credential path"),
        ("~/.azure/msal_token_cache.json", "~/.azure/msal_token_cache.json"),
        ("/root/.azure/azureProfile.json", "/root/.azure/azureProfile.json"),
        ("~/.oci/config", "~/.oci/config"),
        ("~/.config/doctl/config.yaml", "~/.config/doctl/config.yaml"),
        ("~/.terraform.d/credentials.tfrc.json", "~/.terraform.d/credentials.tfrc.json"),
        ("~/.SSH/id_rsa", "~/.SSH/id_rsa"),
        ("/home/bob/.ssh/id_ed25519", "/home/bob/.ssh/id_ed25519"),
        ("/root/.aws/credentials", "/root/.aws/credentials"),
        ("/etc/shadow", "/etc/shadow is a system secret"),
        ("/etc/gshadow", "/etc/gshadow"),
        ("/etc/sudoers", "/etc/sudoers is a system secret"),
        ("/etc/sudoers.d/90-cloud-init-users", "/etc/sudoers.d/90-cloud-init-users"),
        ("/proc/self/environ", "/proc/self/environ is a system secret"),
        ("/proc/1234/environ", "/proc/1234/environ"),
        ("~/work/id_rsa", "~/work/id_rsa is named like a private key"),
        ("~/work/id_rsa.pub", "~/work/id_rsa.pub"),
        ("~/work/id_ed25519", "~/work/id_ed25519"),
        ("~/work/id_ecdsa_sk", "~/work/id_ecdsa_sk"),
        ("~/work/id_dsa", "~/work/id_dsa"),
        ("/srv/tls/server.pem", "/srv/tls/server.pem is named like a private key"),
        ("/srv/tls/SERVER.PEM", "/srv/tls/SERVER.PEM"),
        ("/srv/tls/server.key", "/srv/tls/server.key"),
        ("/srv/tls/client.p12", "/srv/tls/client.p12"),
        ("/srv/tls/client.pfx", "/srv/tls/client.pfx"),
        ("~/Passwords.kdbx", "~/Passwords.kdbx"),
    ];
    for (path, shows) in cases {
        for form in [f.policy.base.expand_tilde(Path::new(path)), PathBuf::from(path)] {
            let got = f.decide(&write, &files(&[&form]), true);
            assert_hard_deny(&got, shows, &form.display().to_string());
        }
    }
}

#[test]
fn paths_off_the_list_are_not_hard_denied() {
    let f = Fixture::new(wide_open());
    let write = spec("file_write", false);
    for path in [
        "~/notes/todo.md",
        "~/.sshd_backup/x",
        "~/.kube/cache/discovery",
        "~/.docker/buildx/x.json",
        "~/.config/git/config",
        "/etc/passwd",
        "/etc/hosts",
        "/proc/self/status",
        "~/keys.txt",
        "~/pem/notes.md",
        "~/ssh/id.txt",
    ] {
        let p = f.policy.base.expand_tilde(Path::new(path));
        let got = f.decide(&write, &files(&[&p]), false);
        assert!(matches!(got, Permission::Allow(_)), "{path}: {got:?}");
    }
}

#[test]
fn dot_dot_and_tilde_forms_are_normalized() {
    let f = Fixture::with_protected(wide_open(), |home| vec![home.join("data/butler.db")]);
    let write = spec("file_write", false);
    let h = f.home().display().to_string();
    // (path as the tool gives it, what the reason shows)
    let cases: Vec<(String, &str)> = vec![
        (format!("{h}/workspace/../.ssh/id_rsa"), "~/.ssh/id_rsa"),
        (format!("{h}/a/b/../../.aws/credentials"), "~/.aws/credentials"),
        (format!("{h}/./.ssh/./config"), "~/.ssh/config"),
        (format!("{h}//.netrc"), "~/.netrc"),
        (format!("{h}/workspace/../../../../../{h}/.kube/config"), "~/.kube/config"),
        ("~/.ssh/id_rsa".into(), "~/.ssh/id_rsa"),
        ("~/workspace/../.gnupg".into(), "~/.gnupg"),
        // Relative to the process's directory, two levels up: still a `.ssh` directory.
        ("workspace/../../.ssh/id_rsa".into(), ".ssh/id_rsa"),
        ("/tmp/../etc/./shadow".into(), "/etc/shadow"),
        (format!("{h}/data/workspaces/u1/../../butler.db"), "~/data/butler.db is Butler's own"),
        (format!("{h}/data/workspaces/u1/../../butler.db-wal"), "~/data/butler.db-wal"),
    ];
    for (path, shows) in &cases {
        let got = f.decide(&write, &files(&[Path::new(path)]), true);
        assert_hard_deny(&got, shows, path);
    }
}

#[cfg(unix)]
#[test]
fn a_symlink_cannot_dodge_the_list() {
    use std::os::unix::fs::symlink;
    let f = Fixture::with_protected(wide_open(), |home| vec![home.join("data/butler.db")]);
    let write = spec("file_write", false);
    let read = spec("file_read", true);
    // A fake credential directory and Butler database under the temporary HOME.
    std::fs::create_dir_all(f.at(".ssh")).unwrap();
    std::fs::write(f.at(".ssh/id_test"), "not a key").unwrap();
    std::fs::create_dir_all(f.at("data/sub")).unwrap();
    std::fs::write(f.at("data/butler.db"), "").unwrap();
    std::fs::create_dir_all(f.at("workspace")).unwrap();
    symlink(f.at(".ssh"), f.at("workspace/keys")).unwrap();
    symlink(f.at(".ssh/id_test"), f.at("workspace/notes.txt")).unwrap();
    symlink(f.at("data/butler.db"), f.at("workspace/db.txt")).unwrap();
    symlink(f.at("data/sub"), f.at("workspace/sub")).unwrap();
    // (path through a link, what the reason shows it leads to)
    let cases: &[(&str, &str)] = &[
        ("workspace/keys/id_test", "~/workspace/keys/id_test leads to ~/.ssh/id_test, a credential path"),
        ("workspace/keys/new_file", "leads to ~/.ssh/new_file"),
        ("workspace/keys", "leads to ~/.ssh"),
        ("workspace/notes.txt", "~/workspace/notes.txt leads to ~/.ssh/id_test"),
        ("workspace/db.txt", "leads to ~/data/butler.db, Butler's own configuration or database"),
        // The kernel applies `..` after following the link: sub/.. is data/, not workspace/.
        ("workspace/sub/../butler.db", "leads to ~/data/butler.db"),
    ];
    for (rel, shows) in cases {
        let path = f.at(rel);
        for tool in [&write, &read] {
            assert_hard_deny(&f.decide(tool, &files(&[&path]), true), shows, rel);
        }
        let command = format!("cat {}", path.display());
        assert_hard_deny(&f.decide(&spec("shell", false), &shell(&command), true), shows, &command);
        let file_url = format!("file://{}", path.display());
        assert_hard_deny(&f.decide(&spec("web_fetch", true), &url(&file_url), true), shows, &file_url);
    }
    // The plain workspace is fine.
    std::fs::write(f.at("workspace/plain.txt"), "").unwrap();
    assert!(matches!(f.decide(&write, &files(&[&f.at("workspace/plain.txt")]), false), Permission::Allow(_)));
}

#[test]
fn a_file_anywhere_below_a_listed_path_is_denied() {
    let f = Fixture::new(wide_open());
    let write = spec("file_write", false);
    for (rel, shows) in [
        ("~/.ssh/sub/dir/file.txt", "~/.ssh/sub/dir/file.txt is a credential path"),
        ("~/.aws/sso/cache/token.json", "~/.aws/sso/cache/token.json"),
        ("~/.config/gh/deep/er/x", "~/.config/gh/deep/er/x"),
        ("~/certs/server.pem/inner.txt", "named like a private key"),
        ("/etc/sudoers.d/a/b", "/etc/sudoers.d/a/b is a system secret"),
    ] {
        let p = f.policy.base.expand_tilde(Path::new(rel));
        assert_hard_deny(&f.decide(&write, &files(&[&p]), true), shows, rel);
    }
    // One bad path among good ones is enough.
    let good = f.at("notes/a.md");
    let bad = f.at(".ssh/known_hosts");
    assert_hard_deny(&f.decide(&write, &files(&[&good, &bad]), true), "~/.ssh/known_hosts", "two paths");
}

#[test]
fn command_lines_mentioning_credentials_are_denied() {
    let f = Fixture::with_protected(wide_open(), |home| vec![home.join("data/butler.db")]);
    let sh = spec("shell", false);
    let h = f.home().display().to_string();
    let cases: Vec<(String, &str)> = vec![
        ("cat ~/.aws/credentials".into(), "~/.aws/credentials is a credential path"),
        ("cp x /home/u/.ssh/authorized_keys".into(), "/home/u/.ssh/authorized_keys is a credential path"),
        (format!("cp x {h}/.ssh/authorized_keys"), "~/.ssh/authorized_keys"),
        ("cat $HOME/.netrc".into(), "~/.netrc"),
        ("tar czf /tmp/k.tgz ${HOME}/.gnupg".into(), "~/.gnupg"),
        ("cat ~/.s\"\"sh/id_rsa".into(), "~/.ssh/id_rsa"),
        ("cat ~/.s\\sh/config".into(), "~/.ssh/config"),
        ("cat ~/.ss?/config".into(), "~/.ss?/config"),
        ("cat ~/.[s]sh/config".into(), "~/.[s]sh/config"),
        ("cat ~/.{foo,aws}/credentials".into(), "~/.aws/credentials"),
        ("echo $(cat ~/.kube/config)".into(), "~/.kube/config"),
        ("cat ~/.kube/conf*".into(), "~/.kube/conf*"),
        ("scp host:x ~/.docker/config.json".into(), "~/.docker/config.json"),
        ("cat ../../.ssh/id_rsa".into(), "../../.ssh/id_rsa"),
        ("cat ~root/.ssh/id_rsa".into(), "~root/.ssh/id_rsa"),
        ("curl file:///etc/shadow".into(), "/etc/shadow"),
        ("curl 'file:///home/u/%2essh/config'".into(), "/home/u/.ssh/config"),
        ("openssl rsa -in server.key".into(), "server.key is named like a private key"),
        ("find / -name '*.pem'".into(), "*.pem"),
        ("cat id_*".into(), "id_*"),
        ("cat /proc/self/environ".into(), "/proc/self/environ"),
        ("cd / && cat etc/shadow".into(), "etc/shadow is a system secret"),
        ("ls>~/.netrc".into(), "~/.netrc"),
        ("git -c credential.helper=store --file=~/.git-credentials x".into(), "~/.git-credentials"),
        (format!("sqlite3 {h}/data/butler.db .dump"), "~/data/butler.db is Butler's own"),
        ("sqlite3 ../../butler.db .dump".into(), "../../butler.db is Butler's own"),
        ("cp butler.db-wal /tmp/x".into(), "butler.db-wal"),
    ];
    for (command, shows) in &cases {
        assert_hard_deny(&f.decide(&sh, &shell(command), true), shows, command);
    }
    // Ordinary commands are not hard-denied (full_auto lets them run here).
    for command in [
        "ls -la",
        "ls *",
        "ls *.*",
        "ls -d .*",
        "sed 's/.*//' notes.txt",
        "grep -rn TODO .",
        "cat ~/notes.md",
        "echo $HOMEDIR/.sshx",
        "git status && git diff",
        "curl https://example.com/",
    ] {
        let got = f.decide(&sh, &shell(command), false);
        assert!(matches!(got, Permission::Allow(_)), "{command}: {got:?}");
    }
}

#[test]
fn file_urls_are_checked_and_other_urls_are_not_paths() {
    let f = Fixture::new(wide_open());
    let fetch = spec("web_fetch", true);
    let h = f.home().display().to_string();
    for (u, shows) in [
        (format!("file://{h}/.ssh/id_rsa"), "~/.ssh/id_rsa"),
        ("file://localhost/etc/shadow".into(), "/etc/shadow"),
        ("FILE:~/.aws/credentials".into(), "~/.aws/credentials"),
        (format!("file://{h}/%2Essh/config"), "~/.ssh/config"),
        (format!("file://{h}/work/../.netrc?x#y"), "~/.netrc"),
    ] {
        assert_hard_deny(&f.decide(&fetch, &url(&u), true), shows, &u);
    }
    let got = f.decide(&fetch, &url("https://example.com/docs/ssh.html"), false);
    assert!(matches!(got, Permission::Allow(_)), "{got:?}");
}

#[test]
fn butlers_own_files_are_denied_as_given_and_by_name() {
    let f = Fixture::with_protected(wide_open(), |home| {
        vec![home.join("data/butler.db"), home.join("config/butler.toml"), PathBuf::from("relative/state.db")]
    });
    let write = spec("file_write", false);
    let cwd = std::env::current_dir().unwrap();
    for path in [
        f.at("data/butler.db"),
        f.at("data/butler.db-wal"),
        f.at("data/butler.db-shm"),
        f.at("data/butler.db-journal"),
        f.at("config/butler.toml"),
        cwd.join("relative/state.db"),
    ] {
        let got = f.decide(&write, &files(&[&path]), true);
        assert_hard_deny(&got, "is Butler's own configuration or database", &path.display().to_string());
    }
    let sh = spec("shell", false);
    for command in ["cat config/butler.toml", "cp state.db /tmp", "sqlite3 ./butler.db"] {
        assert_hard_deny(&f.decide(&sh, &shell(command), true), "Butler's own", command);
    }
    // Other files in the same directories are not protected.
    for path in [f.at("data/other.db"), f.at("config/notes.toml")] {
        assert!(matches!(f.decide(&write, &files(&[&path]), false), Permission::Allow(_)), "{}", path.display());
    }
}

#[test]
fn nothing_gets_past_the_hard_list_in_any_context() {
    // Every lever set as wide as it goes: full_auto globally and in a context for every
    // combination, every tool and path allowed, and the call granted for the session.
    let mut cfg = wide_open();
    for channel in CHANNELS {
        for kind in [ContextKind::Dm, ContextKind::Group] {
            for role in ["owner", "member", "guest"] {
                cfg.contexts.push(PermissionContext {
                    channel: Some((*channel).into()),
                    kind: Some(kind),
                    role: Some(role.into()),
                    mode: Some(Mode::FullAuto),
                    approvers: None,
                    conversation: None,
                });
            }
        }
    }
    let f = Fixture::new(cfg);
    let h = f.home().display().to_string();
    let credential = f.at(".ssh/id_ed25519");
    let actions = [
        files(&[&credential]),
        files(&[&f.at("notes/a.md"), &f.at(".aws/credentials")]),
        shell("cat ~/.aws/credentials"),
        shell(&format!("cp x {h}/.ssh/authorized_keys")),
        url("file:///etc/shadow"),
        Action { command: Some("ls".into()), url: Some(format!("file://{h}/.netrc")), ..Action::default() },
    ];
    for action in &actions {
        assert!(f.policy.hard_denied(action).is_some(), "{action:?}");
        for (name, read_only) in [("file_write", false), ("file_read", true), ("shell", false), ("web_fetch", true)] {
            let tool = spec(name, read_only);
            for channel in CHANNELS {
                for kind in KINDS {
                    for role in ROLES {
                        for granted in [false, true] {
                            let got = f.decide_in(&tool, action, granted, channel, *kind, *role);
                            assert!(
                                matches!(&got, Permission::Deny(r) if r.starts_with("hard deny: ")),
                                "{name} {channel} {kind:?} {role:?} granted={granted} {action:?}: {got:?}"
                            );
                        }
                    }
                }
            }
        }
    }
    assert_eq!(f.policy.hard_denied(&files(&[&f.at("notes/a.md")])), None);
}

#[test]
fn new_builds_the_same_hard_list() {
    // `Policy::new` takes HOME from the process; these paths do not depend on it, so the test
    // never looks into the real HOME.
    let policy = Policy::new(&wide_open(), vec![PathBuf::from("/nonexistent-butler-test/butler.db")]);
    for (path, shows) in [
        ("/etc/shadow", "/etc/shadow is a system secret"),
        ("/nonexistent-butler-test/u/.ssh/id_rsa", "/nonexistent-butler-test/u/.ssh/id_rsa is a credential path"),
        ("/nonexistent-butler-test/butler.db-wal", "Butler's own configuration or database"),
    ] {
        let got = policy.decide(&Request {
            tool: &spec("file_read", true),
            action: &files(&[Path::new(path)]),
            channel: "web",
            kind: ConversationKind::Direct,
            role: UserRole::Owner,
            granted: true,
            args: &serde_json::Value::Null,
        });
        assert_hard_deny(&got, shows, path);
    }
}

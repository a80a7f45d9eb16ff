//! The messages of a turn that parks on approvals: each request's message (made by
//! `permissions::notice`) and, when a request shows only the start of what the call would do,
//! the whole of it as a text file sent right after it (outbox key `approval:<id>:detail`).
//!
//! The file is written under `<workspace root>/.approvals/`, outside every user's workspace (no
//! tool can reach or replace it), as a new file that never follows a link. A file that cannot
//! be written leaves the request with its preview, and a warning in the log; nothing else here
//! touches the disk.

use crate::permissions::notice::{approval_notice, DetailFile, Notice, Room};
use crate::store::{ApprovalRow, NewOutbox};
use butler_channel::OutFile;
use std::path::Path;

/// The folder of the workspace root holding the approvals' detail files.
const FOLDER: &str = ".approvals";

/// The messages asking for `asks` (asked by `asker`) as `room` shows them, each followed by
/// the file with its whole detail when the message shows only its start.
pub(super) async fn approval_notices(
    asks: &[ApprovalRow],
    asker: &str,
    room: Room,
    workspace_root: &Path,
) -> Vec<NewOutbox> {
    let mut out = Vec::with_capacity(asks.len());
    for ask in asks {
        let Notice { message, file } = approval_notice(ask, asker, room);
        out.push(message);
        let Some(file) = file else { continue };
        match write(workspace_root, &ask.id, &file).await {
            Ok(sent) => out.push(NewOutbox::message(file.key, file.conversation, file.caption).with_file(sent)),
            Err(e) => tracing::warn!(
                approval = %ask.id,
                error = %e,
                "the approval's whole detail could not be written; its message shows the start only"
            ),
        }
    }
    out
}

/// Writes `file`'s text as `<root>/.approvals/<id>-<name>` (a new file, never through a link).
async fn write(root: &Path, id: &str, file: &DetailFile) -> std::io::Result<OutFile> {
    let dir = root.join(FOLDER);
    tokio::fs::create_dir_all(&dir).await?;
    let path = dir.join(format!("{id}-{}", file.name));
    let bytes = file.text.clone().into_bytes();
    let size = bytes.len() as u64;
    let target = path.clone();
    tokio::task::spawn_blocking(move || {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut out =
            match std::fs::OpenOptions::new().write(true).create_new(true).custom_flags(libc::O_NOFOLLOW).open(&target)
            {
                // A re-run of the same turn made it already (same approval id, same detail).
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => std::fs::OpenOptions::new()
                    .write(true)
                    .truncate(true)
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(&target)?,
                other => other?,
            };
        out.write_all(&bytes)?;
        out.sync_all()
    })
    .await
    .map_err(std::io::Error::other)??;
    Ok(OutFile {
        path: path.display().to_string(),
        name: file.name.clone(),
        mime: file.mime.to_string(),
        size,
        photo: false,
    })
}

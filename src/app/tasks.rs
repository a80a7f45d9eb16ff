//! Tasks that stop together: the token that tells them to stop and the tracker to wait for
//! them. It must never start a task itself.

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Tasks that stop together: the token that tells them to stop, the tracker to wait for them.
#[derive(Default)]
pub(super) struct Tasks {
    pub(super) cancel: CancellationToken,
    pub(super) tracker: TaskTracker,
}

impl Tasks {
    /// Tells the tasks to stop and waits until all have ended.
    pub(super) async fn stop(&self) {
        self.cancel.cancel();
        self.tracker.close();
        self.tracker.wait().await;
    }
}

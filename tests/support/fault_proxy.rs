//! A TCP fault proxy: it sits between Butler and one of the servers it talks to (Postgres,
//! Redis, the model, a platform fake) and, on the test's word, adds latency to every chunk,
//! holds every byte (a half-open connection: nothing arrives and nothing closes), resets every
//! connection (RST), or refuses new ones; `heal` makes it a plain pipe again.
//!
//! It must never touch the server behind it: a Postgres "restart" here is every connection
//! reset and new ones refused for a while, as a client sees a restart.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::AbortHandle;

/// What the proxy does with bytes right now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// A plain pipe.
    None,
    /// Every chunk waits this long before it goes on.
    Latency(Duration),
    /// Bytes are held (read, not forwarded) and nothing is closed: the peer waits forever.
    Hold,
    /// New connections are closed at once; open ones carry on.
    Refuse,
}

pub struct FaultProxy {
    pub addr: SocketAddr,
    fault: watch::Sender<Fault>,
    /// Open connections: both sockets' raw handles to reset, and the pump tasks.
    conns: Arc<Mutex<Vec<(std::os::fd::RawFd, std::os::fd::RawFd, AbortHandle)>>>,
    accept: AbortHandle,
}

impl FaultProxy {
    /// A proxy on a free loopback port to `target`.
    pub async fn start(target: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (fault, watching) = watch::channel(Fault::None);
        let conns: Arc<Mutex<Vec<_>>> = Arc::default();
        let list = conns.clone();
        let accept = tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                if *watching.borrow() == Fault::Refuse {
                    use std::os::fd::AsRawFd;
                    rst_on_close(inbound.as_raw_fd());
                    drop(inbound);
                    continue;
                }
                let Ok(outbound) = TcpStream::connect(target).await else { continue };
                let _ = (inbound.set_nodelay(true), outbound.set_nodelay(true));
                use std::os::fd::AsRawFd;
                let fds = (inbound.as_raw_fd(), outbound.as_raw_fd());
                let (ir, iw) = inbound.into_split();
                let (or, ow) = outbound.into_split();
                let (w1, w2) = (watching.clone(), watching.clone());
                let task = tokio::spawn(async move {
                    tokio::select! {
                        _ = pump(ir, ow, w1) => {}
                        _ = pump(or, iw, w2) => {}
                    }
                });
                let mut open = list.lock().unwrap();
                open.retain(|(_, _, t): &(_, _, AbortHandle)| !t.is_finished());
                open.push((fds.0, fds.1, task.abort_handle()));
            }
        })
        .abort_handle();
        Self { addr, fault, conns, accept }
    }

    /// `host:port` of the proxy.
    pub fn host_port(&self) -> String {
        self.addr.to_string()
    }

    pub fn set(&self, fault: Fault) {
        let _ = self.fault.send(fault);
    }

    /// Back to a plain pipe (held bytes flow on).
    pub fn heal(&self) {
        self.set(Fault::None);
    }

    /// Resets every open connection (both sides get an RST), as a server restart or a NAT
    /// dropping its table would.
    pub fn reset_all(&self) {
        let open: Vec<_> = self.conns.lock().unwrap().drain(..).collect();
        for (a, b, task) in open {
            // SO_LINGER 0, then the task (and its sockets) dropped: RST instead of FIN.
            if !task.is_finished() {
                rst_on_close(a);
                rst_on_close(b);
            }
            task.abort();
        }
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        let mut open = self.conns.lock().unwrap();
        open.retain(|(_, _, t)| !t.is_finished());
        open.len()
    }
}

/// Makes closing socket `fd` send an RST (SO_LINGER with a zero timeout).
fn rst_on_close(fd: std::os::fd::RawFd) {
    let linger = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: a plain setsockopt on a socket this proxy owns; were it closed already, the call
    // fails with EBADF, which is ignored.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.accept.abort();
        for (_, _, t) in self.conns.lock().unwrap().drain(..) {
            t.abort();
        }
    }
}

/// Copies `from` to `to` under the current fault until either side closes.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut fault: watch::Receiver<Fault>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        loop {
            let now = *fault.borrow_and_update();
            match now {
                Fault::Hold => {
                    if fault.changed().await.is_err() {
                        return;
                    }
                }
                Fault::Latency(d) => {
                    tokio::time::sleep(d).await;
                    break;
                }
                Fault::None | Fault::Refuse => break,
            }
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

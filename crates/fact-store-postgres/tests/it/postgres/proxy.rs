//! A TCP proxy on loopback between a store and the test server, with the network faults
//! the PostgreSQL tests need, armed one at a time:
//!
//! - [`Proxy::lose_next_commit_reply`]: the client's next `COMMIT` goes to the server, its
//!   answer is swallowed and both ends are closed (a server that restarts between a commit
//!   and its reply);
//! - [`Proxy::stall_on`]: the first message from a client that holds a marker (the SQL of a
//!   statement a connection prepares, which travels in its `Parse` message) is held back
//!   until [`Proxy::release`], so its operation stalls on the network as long as a test
//!   needs, while the proxy's other connections carry on.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// A proxy from a loopback port to the server.
pub(crate) struct Proxy {
    pub(crate) port: u16,
    faults: Arc<Faults>,
}

/// What the proxy's connections share.
#[derive(Default)]
struct Faults {
    lose_commit: AtomicBool,
    stall: Mutex<Stall>,
    changed: Condvar,
}

#[derive(Default)]
struct Stall {
    /// Held back: the first client message holding these bytes (then `None`).
    marker: Option<Vec<u8>>,
    /// A message is being held.
    stalled: bool,
    /// Held messages may go.
    released: bool,
}

impl Proxy {
    /// Listens on a free loopback port and relays each connection to `upstream`
    /// (`host:port`).
    pub(crate) fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let faults = Arc::new(Faults::default());
        let shared = faults.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(&upstream) else {
                    continue;
                };
                relay(client, server, shared.clone());
            }
        });
        Proxy { port, faults }
    }

    /// `url` (a `postgres://user@host:port/db` URL of the server) through this proxy.
    pub(crate) fn url(&self, url: &str) -> String {
        let (host_port, _) = address(url);
        url.replacen(&host_port, &format!("127.0.0.1:{}", self.port), 1)
    }

    /// Loses the reply to the next `COMMIT` any connection sends, and closes it.
    pub(crate) fn lose_next_commit_reply(&self) {
        self.faults.lose_commit.store(true, Ordering::SeqCst);
    }

    /// Holds back the first client message that contains `marker` until
    /// [`release`](Self::release).
    pub(crate) fn stall_on(&self, marker: &str) {
        let mut stall = self.faults.stall.lock().unwrap();
        *stall = Stall {
            marker: Some(marker.as_bytes().to_vec()),
            ..Stall::default()
        };
    }

    /// Waits (at most `timeout`) until a message is held back; whether one is.
    pub(crate) fn wait_stalled(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut stall = self.faults.stall.lock().unwrap();
        while !stall.stalled {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            stall = self.faults.changed.wait_timeout(stall, left).unwrap().0;
        }
        true
    }

    /// Lets the held message go on to the server.
    pub(crate) fn release(&self) {
        let mut stall = self.faults.stall.lock().unwrap_or_else(|e| e.into_inner());
        stall.released = true;
        self.faults.changed.notify_all();
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        // No relay waits for ever on a test that ended early.
        self.release();
    }
}

/// `(host:port, the rest)` of a `postgres://user@host:port/db` URL.
pub(crate) fn address(url: &str) -> (String, String) {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let rest = rest.split_once('@').map_or(rest, |(_, rest)| rest);
    let host_port = rest.split_once('/').map_or(rest, |(hp, _)| hp);
    (host_port.to_owned(), url.replacen(host_port, "{proxy}", 1))
}

/// Waits while `chunk` is the message to hold back (see [`Proxy::stall_on`]).
fn hold_if_marked(faults: &Faults, chunk: &[u8]) {
    let mut stall = faults.stall.lock().unwrap_or_else(|e| e.into_inner());
    let marked = stall
        .marker
        .as_deref()
        .is_some_and(|marker| chunk.windows(marker.len()).any(|w| w == marker));
    if !marked {
        return;
    }
    stall.marker = None;
    stall.stalled = true;
    faults.changed.notify_all();
    while !stall.released {
        stall = faults
            .changed
            .wait(stall)
            .unwrap_or_else(|e| e.into_inner());
    }
}

/// Copies both ways between `client` and `server`, with the armed faults.
fn relay(client: TcpStream, server: TcpStream, faults: Arc<Faults>) {
    let lose_reply = Arc::new(AtomicBool::new(false));
    let (mut from_client, mut to_server) =
        (client.try_clone().unwrap(), server.try_clone().unwrap());
    let lose = lose_reply.clone();
    std::thread::spawn(move || {
        let mut buffer = vec![0u8; 64 * 1024];
        while let Ok(n) = from_client.read(&mut buffer) {
            let Some(chunk) = buffer.get(..n).filter(|c| !c.is_empty()) else {
                break;
            };
            if chunk.windows(6).any(|w| w == b"COMMIT")
                && faults.lose_commit.swap(false, Ordering::SeqCst)
            {
                lose.store(true, Ordering::SeqCst);
            }
            hold_if_marked(&faults, chunk);
            if to_server.write_all(chunk).is_err() {
                break;
            }
        }
        let _ = to_server.shutdown(Shutdown::Both);
    });
    let (mut from_server, mut to_client) = (server, client);
    std::thread::spawn(move || {
        let mut buffer = vec![0u8; 64 * 1024];
        while let Ok(n) = from_server.read(&mut buffer) {
            let Some(chunk) = buffer.get(..n).filter(|c| !c.is_empty()) else {
                break;
            };
            if lose_reply.load(Ordering::SeqCst) {
                // The commit's answer never reaches the client.
                break;
            }
            if to_client.write_all(chunk).is_err() {
                break;
            }
        }
        let _ = to_client.shutdown(Shutdown::Both);
        let _ = from_server.shutdown(Shutdown::Both);
    });
}

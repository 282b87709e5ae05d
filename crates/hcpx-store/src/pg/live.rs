//! The LISTEN connection: every write of a document or a Sense event notifies channel `hcpx` in its own
//! transaction, and this connection turns each notification into a new document generation (so every cached
//! document is read again) or a Sense wake-up. While it is down, or reconnecting, no cache is trusted and
//! watchers fall back to a bounded poll: a change is never missed, only seen later.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_postgres::{AsyncMessage, NoTls};

/// The channel every change is announced on.
pub(crate) const CHANNEL: &str = "hcpx";

/// What the listener knows now.
#[derive(Debug, Default)]
pub struct Live {
    connected: AtomicBool,
    generation: AtomicU64,
    sense: Mutex<HashMap<String, u64>>,
    /// Woken at every Sense event and at every (re)connect.
    pub wake: tokio::sync::Notify,
}

impl Live {
    /// The current document generation and whether the listener is up (a cache is trusted only while it is).
    pub fn generation(&self) -> (u64, bool) {
        // Read the flag after the generation: a reconnect bumps the generation before it sets the flag.
        let g = self.generation.load(Ordering::Acquire);
        (g, self.connected.load(Ordering::Acquire))
    }

    pub fn connected(&self) -> bool {
        self.connected.load(Ordering::Acquire)
    }

    /// The newest Sense id announced for `tenant` since the listener (re)connected.
    pub fn sense_head(&self, tenant: &str) -> Option<u64> {
        self.sense.lock().ok().and_then(|m| m.get(tenant).copied())
    }

    fn bump(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    fn set_connected(&self, up: bool) {
        self.bump();
        self.connected.store(up, Ordering::Release);
        if !up {
            if let Ok(mut m) = self.sense.lock() {
                m.clear();
            }
        }
        self.wake.notify_waiters();
    }

    /// One notification: `doc` (a document changed) or `sense:<id>:<tenant>`.
    fn notified(&self, payload: &str) {
        if let Some(rest) = payload.strip_prefix("sense:") {
            if let Some((id, tenant)) = rest.split_once(':') {
                if let (Ok(id), Ok(mut m)) = (id.parse::<u64>(), self.sense.lock()) {
                    let e = m.entry(tenant.to_string()).or_insert(0);
                    *e = (*e).max(id);
                }
            }
            self.wake.notify_waiters();
        } else {
            self.bump();
        }
    }
}

/// Keeps a LISTEN connection open for the life of the store's runtime, reconnecting every 250 ms while the
/// database is away.
pub(super) fn spawn_listener(
    handle: &tokio::runtime::Handle,
    config: tokio_postgres::Config,
    live: Arc<Live>,
) {
    handle.spawn(async move {
        loop {
            if let Ok((client, mut conn)) = config.connect(NoTls).await {
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
                let driver = tokio::spawn(async move {
                    while let Some(Ok(msg)) = futures_util::future::poll_fn(|cx| conn.poll_message(cx)).await
                    {
                        if let AsyncMessage::Notification(n) = msg {
                            if tx.send(n.payload().to_string()).is_err() {
                                break;
                            }
                        }
                    }
                });
                if client.batch_execute(&format!("LISTEN {CHANNEL}")).await.is_ok() {
                    live.set_connected(true);
                    while let Some(payload) = rx.recv().await {
                        live.notified(&payload);
                    }
                    live.set_connected(false);
                }
                driver.abort();
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    });
}

/// Holds this replica's liveness lock (a session advisory lock on a connection of its own, taken again after
/// a reconnect) and, every few seconds, turns the write intents of replicas whose lock is free into
/// `unknown` audit lines (pg/audit.rs), settles their working tasks as unknown and removes expired tasks
/// (pg/tasks.rs).
pub(super) fn spawn_liveness(
    handle: &tokio::runtime::Handle,
    config: tokio_postgres::Config,
    me: i32,
    pool: deadpool_postgres::Pool,
    shown: String,
) {
    handle.spawn(async move {
        loop {
            if let Ok((client, conn)) = config.connect(NoTls).await {
                let driver = tokio::spawn(conn);
                let held =
                    client.execute("SELECT pg_advisory_lock($1, $2)", &[&super::audit::LIVENESS, &me]).await;
                if held.is_ok() {
                    let _ = driver.await;
                } else {
                    driver.abort();
                }
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    });
    handle.spawn(async move {
        loop {
            let _ = super::audit::sweep(&pool, &shown, me).await;
            let _ = super::tasks::sweep(&pool, &shown, me).await;
            tokio::time::sleep(SWEEP).await;
        }
    });
}

/// How often a replica looks for the write intents of replicas that are gone.
const SWEEP: Duration = Duration::from_secs(2);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_change_or_a_reconnect_moves_the_generation_and_sense_heads_only_grow() {
        let live = Live::default();
        let (g0, up) = live.generation();
        assert!(!up);
        live.set_connected(true);
        let (g1, up) = live.generation();
        assert!(up && g1 > g0);
        live.notified("doc");
        assert!(live.generation().0 > g1);
        live.notified("sense:7:acme");
        live.notified("sense:5:acme");
        assert_eq!(live.sense_head("acme"), Some(7));
        live.set_connected(false);
        assert_eq!(live.sense_head("acme"), None, "after a disconnect nothing is vouched for");
    }
}

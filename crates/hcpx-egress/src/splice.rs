//! Bytes relayed between the client and the origin, counted as they pass and cut at the per-connection cap, so
//! the event says how much went each way and a runaway transfer ends at the limit, not at the peer's leisure.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::refusal::{Refusal, RefusalKind};

/// Why a relay stopped early.
pub enum Cut {
    /// A byte limit was reached (what fits under it was relayed).
    Limit(Refusal),
    /// A peer reset or failed: the request ends, no refusal.
    Io,
}

/// One direction of a relay: what the count was, the cap, and how to name it in a refusal.
pub struct Leg<'a> {
    pub count: &'a AtomicU64,
    pub cap: u64,
    pub name: &'static str,
}

impl Leg<'_> {
    /// Counts `n` more bytes; returns how many fit under the cap.
    fn admit(&self, n: usize) -> usize {
        let sent = self.count.load(Ordering::Relaxed);
        let room = self.cap.saturating_sub(sent);
        let fit = (n as u64).min(room) as usize;
        self.count.fetch_add(fit as u64, Ordering::Relaxed);
        fit
    }

    fn limit(&self) -> Cut {
        let reason =
            format!("more than {} bytes {}; the connection was cut at the limit", self.cap, self.name);
        Cut::Limit(Refusal::new(RefusalKind::Limit, reason))
    }

    /// Writes `bytes` through this leg (counted, cut at the cap).
    pub async fn send<W: AsyncWrite + Unpin>(&self, w: &mut W, bytes: &[u8]) -> Result<(), Cut> {
        let fit = self.admit(bytes.len());
        w.write_all(&bytes[..fit]).await.map_err(|_| Cut::Io)?;
        if fit < bytes.len() {
            return Err(self.limit());
        }
        Ok(())
    }

    /// Copies `r` to `w` until `r` ends, then shuts `w`'s write side if `shutdown`. The first bytes copied are
    /// kept in `first` (up to its capacity) for a caller that wants the status line.
    pub async fn copy<R, W>(
        &self,
        r: &mut R,
        w: &mut W,
        shutdown: bool,
        first: &mut Vec<u8>,
    ) -> Result<(), Cut>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = r.read(&mut buf).await.map_err(|_| Cut::Io)?;
            if n == 0 {
                if shutdown {
                    w.shutdown().await.map_err(|_| Cut::Io)?;
                }
                return Ok(());
            }
            let room = first.capacity() - first.len();
            first.extend_from_slice(&buf[..n.min(room)]);
            self.send(w, &buf[..n]).await?;
        }
    }
}

impl Leg<'_> {
    /// As `copy`, with every chunk passed through `filter` first (a call with host-bound credentials: a plain
    /// request body scanned for a placeholder, a plain response kept from echoing a value), and `filter(None)`
    /// sent when `r` ends (what it held back); a refusal from `filter` cuts the copy there, before that chunk.
    pub async fn copy_filtered<R, W, F>(
        &self,
        r: &mut R,
        w: &mut W,
        shutdown: bool,
        first: &mut Vec<u8>,
        mut filter: F,
    ) -> Result<(), Cut>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
        F: FnMut(Option<&[u8]>) -> Result<Vec<u8>, Refusal>,
    {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = r.read(&mut buf).await.map_err(|_| Cut::Io)?;
            if n == 0 {
                let rest = filter(None).map_err(Cut::Limit)?;
                self.send(w, &rest).await?;
                if shutdown {
                    w.shutdown().await.map_err(|_| Cut::Io)?;
                }
                return Ok(());
            }
            let room = first.capacity() - first.len();
            first.extend_from_slice(&buf[..n.min(room)]);
            let out = filter(Some(&buf[..n])).map_err(Cut::Limit)?;
            self.send(w, &out).await?;
        }
    }
}

/// Drives both directions: ends when `down` ends if `up_optional` (a plain request: once the response is
/// relayed, the request is over), else when both have ended (a tunnel); the first cut ends both.
pub async fn both<U, D>(up: U, down: D, up_optional: bool) -> Result<(), Cut>
where
    U: Future<Output = Result<(), Cut>>,
    D: Future<Output = Result<(), Cut>>,
{
    tokio::pin!(up, down);
    let (mut up_done, mut down_done) = (false, false);
    while !(down_done && (up_done || up_optional)) {
        tokio::select! {
            r = &mut up, if !up_done => { up_done = true; r?; }
            r = &mut down, if !down_done => { down_done = true; r?; }
        }
    }
    Ok(())
}

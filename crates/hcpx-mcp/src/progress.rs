//! Progress of a call, for a client that asks (its request carries a progress token): one notification when the
//! call starts and one about every second while it runs, each with the tool's title and the time so far, and none
//! once it has answered. Each is sent from the call's own task, so over Streamable HTTP it goes on the stream of
//! the request it is about, and the answer follows the last one.

use rmcp::model::ProgressNotificationParam;
use rmcp::service::RequestContext;
use rmcp::RoleServer;
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;

/// How often a running call says it still runs.
pub const EVERY: Duration = Duration::from_secs(1);

/// `work`'s output; meanwhile, where the request asked for progress, notifications naming `title`.
pub async fn with_progress<T>(
    work: impl Future<Output = T>,
    context: &RequestContext<RoleServer>,
    title: &str,
) -> T {
    let Some(token) = context.meta.get_progress_token() else { return work.await };
    let start = Instant::now();
    let send = |elapsed: Duration| {
        let message =
            if elapsed.is_zero() { title.to_string() } else { format!("{title} ({} s)", elapsed.as_secs()) };
        let note = ProgressNotificationParam::new(token.clone(), elapsed.as_secs_f64()).with_message(message);
        let peer = context.peer.clone();
        // Sent before the next step, so no notification can follow the answer; a client that stops reading does
        // not hold the call (each waits at most one period).
        async move {
            let _ = tokio::time::timeout(EVERY, peer.notify_progress(note)).await;
        }
    };
    send(Duration::ZERO).await;
    tokio::pin!(work);
    let mut tick = tokio::time::interval_at(start + EVERY, EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            biased;
            out = &mut work => return out,
            _ = tick.tick() => send(start.elapsed()).await,
        }
    }
}

//! The tool list follows the store: a pack installed, activated, deactivated or removed while a client is
//! connected is announced with `notifications/tools/list_changed`. Up to protocol 2025-11-25 to each
//! initialized client (stdio, or one HTTP session); from 2026-07-28 on, where there is no session, on each
//! `subscriptions/listen` stream that asked for it (the stream's other categories are not served: hcpx has
//! no prompts or resources that change).

use rmcp::model::SubscriptionFilter;
use rmcp::service::SubscriptionContext;
use rmcp::{Peer, RoleServer};
use std::collections::BTreeMap;
use std::time::Duration;

use super::server::HcpServer;

/// How often the store is looked at for packs installed, activated or removed while the server runs.
const WATCH_EVERY: Duration = Duration::from_millis(300);

/// Each pack's id, activation, per-tenant activation and install time (`None`: the store could not be read).
type Installs = Option<Vec<(String, bool, BTreeMap<String, bool>, String)>>;

/// What the tools follow from (each pack's id, activation, per-tenant activation and install) and the tool
/// names last announced. Reading the first is one stat of state.json (the store's read cache); the tools are
/// rebuilt only when it changed.
struct ToolWatch {
    installs: Installs,
    names: Vec<String>,
}

impl ToolWatch {
    fn new(server: &HcpServer) -> ToolWatch {
        ToolWatch { installs: installs(server), names: names(server) }
    }

    /// Waits until the set of tool names changed (true), or until `closed` says the client is gone (false).
    async fn changed(&mut self, server: &HcpServer, closed: impl Fn() -> bool) -> bool {
        loop {
            tokio::time::sleep(WATCH_EVERY).await;
            if closed() {
                return false;
            }
            let now = installs(server);
            if now == self.installs {
                continue;
            }
            self.installs = now;
            let now = names(server);
            if now != self.names {
                self.names = now;
                return true;
            }
        }
    }
}

fn installs(server: &HcpServer) -> Installs {
    server.runtime.store().state().ok().map(|st| {
        st.packs
            .iter()
            .map(|(id, p)| (id.clone(), p.activated, p.tenants.clone(), p.installed_at.clone()))
            .collect()
    })
}

fn names(server: &HcpServer) -> Vec<String> {
    server.tools(None).into_keys().collect()
}

/// An initialized client (2025-11-25 and earlier): told of each change until its transport closes.
pub(crate) async fn watch_tools(server: HcpServer, peer: Peer<RoleServer>) {
    let mut watch = ToolWatch::new(&server);
    while watch.changed(&server, || peer.is_transport_closed()).await {
        if peer.notify_tool_list_changed().await.is_err() {
            return;
        }
    }
}

/// What a `subscriptions/listen` stream may carry: tool list changes only (the SDK also drops what the
/// client did not ask for).
pub(crate) fn accepted_filter() -> SubscriptionFilter {
    SubscriptionFilter::builder().tools_list_changed().build()
}

/// One `subscriptions/listen` stream (2026-07-28): told of each change until the client cancels it or goes
/// away. A stream that did not ask for tool list changes only waits.
pub(crate) async fn listen_tools(server: &HcpServer, subscription: SubscriptionContext) {
    let peer = subscription.request_context().peer.clone();
    let wants_tools = subscription.accepted().tools_list_changed == Some(true);
    let mut watch = ToolWatch::new(server);
    loop {
        tokio::select! {
            () = subscription.cancelled() => return,
            changed = watch.changed(server, || peer.is_transport_closed()) => {
                if !changed {
                    return;
                }
                if wants_tools && subscription.sink().notify_tool_list_changed().await.is_err() {
                    return;
                }
            }
        }
    }
}

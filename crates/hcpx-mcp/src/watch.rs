//! What a connected client was listed follows the store: a pack installed, activated, deactivated or removed
//! announces `notifications/tools/list_changed` when the set of tools changed, and
//! `notifications/resources/list_changed` when the set of Skills did (or one was installed anew). Up to protocol
//! 2025-11-25 to each initialized client (stdio, or one HTTP session); from 2026-07-28 on, where there is no
//! session, on each `subscriptions/listen` stream that asked for them.

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

/// What changed since the last look.
#[derive(Default)]
struct Changed {
    tools: bool,
    skills: bool,
}

/// What the lists follow from (each pack's id, activation, per-tenant activation and install) and what was last
/// announced: the tool names of every tenant, and the Skills they bring (each pack with a tool, as installed).
/// Reading the first is one stat of state.json (the store's read cache); the lists are rebuilt only when it
/// changed.
struct Watch {
    installs: Installs,
    tools: Vec<String>,
    skills: Vec<(String, Option<String>)>,
}

impl Watch {
    fn new(server: &HcpServer) -> Watch {
        let installs = installs(server);
        let (tools, skills) = lists(server, &installs);
        Watch { installs, tools, skills }
    }

    /// Waits until a list changed (`Some`), or until `closed` says the client is gone (`None`).
    async fn changed(&mut self, server: &HcpServer, closed: impl Fn() -> bool) -> Option<Changed> {
        loop {
            tokio::time::sleep(WATCH_EVERY).await;
            if closed() {
                return None;
            }
            let now = installs(server);
            if now == self.installs {
                continue;
            }
            self.installs = now;
            let (tools, skills) = lists(server, &self.installs);
            let changed = Changed { tools: tools != self.tools, skills: skills != self.skills };
            (self.tools, self.skills) = (tools, skills);
            if changed.tools || changed.skills {
                return Some(changed);
            }
        }
    }
}

fn installs(server: &HcpServer) -> Installs {
    server.runtime().store().state().ok().map(|st| {
        st.packs
            .iter()
            .map(|(id, p)| (id.clone(), p.activated, p.tenants.clone(), p.installed_at.clone()))
            .collect()
    })
}

/// The tool names of every tenant, and the Skills they bring: each pack with a tool, with its install time.
fn lists(server: &HcpServer, installs: &Installs) -> (Vec<String>, Vec<(String, Option<String>)>) {
    let tools = server.tools_of(None);
    let mut skills: Vec<(String, Option<String>)> = tools
        .values()
        .map(|t| {
            let at = installs.iter().flatten().find(|i| i.0 == t.pack_id).map(|i| i.3.clone());
            (t.pack_id.clone(), at)
        })
        .collect();
    skills.sort();
    skills.dedup();
    (tools.keys().cloned().collect(), skills)
}

/// An initialized client (2025-11-25 and earlier): told of each change until its transport closes.
pub(crate) async fn watch(server: HcpServer, peer: Peer<RoleServer>) {
    let mut watch = Watch::new(&server);
    while let Some(changed) = watch.changed(&server, || peer.is_transport_closed()).await {
        if changed.tools && peer.notify_tool_list_changed().await.is_err() {
            return;
        }
        if changed.skills && peer.notify_resource_list_changed().await.is_err() {
            return;
        }
    }
}

/// What a `subscriptions/listen` stream may carry: tool and resource list changes (the SDK also drops what the
/// client did not ask for).
pub(crate) fn accepted_filter() -> SubscriptionFilter {
    SubscriptionFilter::builder().tools_list_changed().resources_list_changed().build()
}

/// One `subscriptions/listen` stream (2026-07-28): told of each change it asked for until the client cancels it
/// or goes away.
pub(crate) async fn listen(server: &HcpServer, subscription: SubscriptionContext) {
    let peer = subscription.request_context().peer.clone();
    let accepted = subscription.accepted();
    let (wants_tools, wants_skills) =
        (accepted.tools_list_changed == Some(true), accepted.resources_list_changed == Some(true));
    let mut watch = Watch::new(server);
    loop {
        tokio::select! {
            () = subscription.cancelled() => return,
            changed = watch.changed(server, || peer.is_transport_closed()) => {
                let Some(changed) = changed else { return };
                let sink = subscription.sink();
                if wants_tools && changed.tools && sink.notify_tool_list_changed().await.is_err() {
                    return;
                }
                if wants_skills && changed.skills && sink.notify_resource_list_changed().await.is_err() {
                    return;
                }
            }
        }
    }
}

//! While a client is connected (over stdio, or one HTTP session), what it was listed follows the store: a pack
//! installed, activated, deactivated or removed announces `notifications/tools/list_changed` when the set of tools
//! changed, and `notifications/resources/list_changed` when the set of Skills did (or one was installed anew).

use rmcp::{Peer, RoleServer};
use std::time::Duration;

use super::server::HcpServer;

/// How often the store is looked at for packs installed, activated or removed while the server runs.
const WATCH_EVERY: Duration = Duration::from_millis(300);

/// Watches the store for `peer` until its transport closes.
pub async fn watch(server: HcpServer, peer: Peer<RoleServer>) {
    // What the lists follow from: each pack's id, activation and install. Reading it is one stat of
    // state.json (the store's read cache); the lists are rebuilt only when it changed.
    let installs = |s: &HcpServer| {
        s.runtime().store().state().ok().map(|st| {
            st.packs
                .iter()
                .map(|(id, p)| (id.clone(), p.activated, p.tenants.clone(), p.installed_at.clone()))
                .collect::<Vec<_>>()
        })
    };
    // The tools of every tenant, and the Skills they bring: each pack with a tool, as installed.
    let lists = |s: &HcpServer, installs: &Option<Vec<(String, bool, _, String)>>| {
        let tools = s.tools_of(None);
        let mut skills: Vec<(String, Option<String>)> = tools
            .values()
            .map(|t| {
                let at = installs.iter().flatten().find(|i| i.0 == t.pack_id).map(|i| i.3.clone());
                (t.pack_id.clone(), at)
            })
            .collect();
        skills.sort();
        skills.dedup();
        (tools.into_keys().collect::<Vec<_>>(), skills)
    };
    let mut seen_installs = installs(&server);
    let (mut seen_tools, mut seen_skills) = lists(&server, &seen_installs);
    loop {
        tokio::time::sleep(WATCH_EVERY).await;
        if peer.is_transport_closed() {
            return;
        }
        let now = installs(&server);
        if now == seen_installs {
            continue;
        }
        seen_installs = now;
        let (tools, skills) = lists(&server, &seen_installs);
        if tools != seen_tools {
            seen_tools = tools;
            if peer.notify_tool_list_changed().await.is_err() {
                return;
            }
        }
        if skills != seen_skills {
            seen_skills = skills;
            if peer.notify_resource_list_changed().await.is_err() {
                return;
            }
        }
    }
}

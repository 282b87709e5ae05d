//! The tool maps a server hands out, kept per viewer and per pack version, so a `tools/call` (and rmcp's look-up
//! of a tool's schema before it, `get_tool`) finds its tool without building every tool of every pack again.
//! Fresh by construction: each look-up asks the runtime for the activated packs as they are now (its state is
//! read through the store's cache, each pack through the runtime's, which hands out a new `Arc` when a pack is
//! installed again), and a kept map is used only while that list is the very same packs, in the same order.
//! An install, update, activation or removal therefore builds the map again at the next look-up.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::model::{Grants, Principal};
use crate::pack::Pack;
use crate::runtime::Runtime;
use crate::tools::{activated_tools_of, ToolSpec};

/// A map of tools, shared.
pub type ToolMap = Arc<BTreeMap<String, ToolSpec>>;

/// How many viewers' maps are kept; past it the oldest goes (a viewer is a tenant and its grants).
const MAX_VIEWERS: usize = 64;

/// Whom a map was built for: every tenant (`None`), or one tenant with its grants.
type ViewerKey = Option<(String, Grants)>;

struct Entry {
    viewer: ViewerKey,
    /// The packs the map was built from; held, so their addresses cannot be reused by other packs meanwhile.
    packs: Vec<Arc<Pack>>,
    tools: ToolMap,
}

/// The kept maps; cheap to clone (one per server, shared by every request's handler).
#[derive(Clone, Default)]
pub struct ToolCache {
    entries: Arc<Mutex<Vec<Entry>>>,
}

fn same_packs(a: &[Arc<Pack>], b: &[Arc<Pack>]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| Arc::ptr_eq(x, y))
}

impl ToolCache {
    /// The tools `viewer` may call (`None`: every tool of every activated pack), as [`crate::tools::activated_tools`]
    /// builds them, from the kept map while the activated packs are the same ones.
    pub fn tools(&self, runtime: &Runtime, viewer: Option<&Principal>) -> ToolMap {
        let packs = runtime.activated_packs(viewer.map(|v| v.tenant.as_str()));
        let key: ViewerKey = viewer.map(|v| (v.tenant.clone(), v.grants.clone()));
        if let Ok(entries) = self.entries.lock() {
            if let Some(e) = entries.iter().find(|e| e.viewer == key && same_packs(&e.packs, &packs)) {
                return e.tools.clone();
            }
        }
        let tools: ToolMap = Arc::new(activated_tools_of(&packs, viewer));
        if let Ok(mut entries) = self.entries.lock() {
            entries.retain(|e| e.viewer != key);
            if entries.len() >= MAX_VIEWERS {
                entries.remove(0);
            }
            entries.push(Entry { viewer: key, packs, tools: tools.clone() });
        }
        tools
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::grants::Grant;
    use crate::model::Invoker;
    use crate::store::Store;
    use std::path::Path;

    fn pack_dir(id: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packs").join(id)
    }

    fn runtime(home: &Path) -> Runtime {
        let store = Store::open(home).unwrap();
        store.install(&pack_dir("ledger")).unwrap();
        store.set_activated(&["ledger".to_string()], true, None).unwrap();
        Runtime::new(store)
    }

    fn names(m: &ToolMap) -> Vec<String> {
        m.keys().cloned().collect()
    }

    #[test]
    fn a_look_up_with_the_packs_unchanged_reuses_the_map() {
        let home = tempfile::tempdir().unwrap();
        let rt = runtime(home.path());
        let cache = ToolCache::default();
        let first = cache.tools(&rt, None);
        assert!(first.contains_key("ledger__transfer"), "{:?}", names(&first));
        assert!(Arc::ptr_eq(&first, &cache.tools(&rt, None)), "the map was built again with nothing changed");
        // The same map a fresh build gives.
        assert_eq!(*first, crate::tools::activated_tools(&rt, None));
        // A clone shares the kept maps (a served face clones one server per request).
        assert!(Arc::ptr_eq(&first, &cache.clone().tools(&rt, None)));
    }

    #[test]
    fn an_activation_an_install_or_other_grants_build_the_map_again() {
        let home = tempfile::tempdir().unwrap();
        let rt = runtime(home.path());
        let cache = ToolCache::default();
        let before = cache.tools(&rt, None);
        // Another pack activated: its tools show at the next look-up.
        rt.store().install(&pack_dir("tickets")).unwrap();
        rt.store().set_activated(&["tickets".to_string()], true, None).unwrap();
        let after = cache.tools(&rt, None);
        assert!(after.keys().any(|k| k.starts_with("tickets__")), "{:?}", names(&after));
        assert_eq!(*after, crate::tools::activated_tools(&rt, None));
        // Deactivated: its tools go.
        rt.store().set_activated(&["tickets".to_string()], false, None).unwrap();
        let gone = cache.tools(&rt, None);
        assert_eq!(names(&gone), names(&before));
        // Installed again (a new version of the pack): a new map, built from the new pack.
        let again = cache.tools(&rt, None);
        std::thread::sleep(std::time::Duration::from_millis(20));
        rt.store().install(&pack_dir("ledger")).unwrap();
        let reinstalled = cache.tools(&rt, None);
        assert!(!Arc::ptr_eq(&again, &reinstalled), "a reinstalled pack kept the old map");
        // A viewer's grants choose its tools, each viewer its own map.
        let only = |verbs: &[&str]| Principal {
            id: "p".into(),
            tenant: "local".into(),
            grants: crate::model::Grants::Only(vec![format!("verb.exec.read:ledger:{}", verbs.join(","))
                .parse::<Grant>()
                .unwrap()]),
            invoker: Invoker::Mcp,
        };
        let narrow = cache.tools(&rt, Some(&only(&["setup.status"])));
        assert_eq!(*narrow, crate::tools::activated_tools(&rt, Some(&only(&["setup.status"]))));
        assert!(!narrow.contains_key("ledger__transfer"), "{:?}", names(&narrow));
        let all = cache.tools(&rt, None);
        assert!(all.contains_key("ledger__transfer"));
    }
}

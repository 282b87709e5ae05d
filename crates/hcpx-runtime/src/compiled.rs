//! Compiled before the first call, in a long-lived runtime (`hcpx serve`): a composite pack that is activated,
//! or installed anew while active, by this process or another (another CLI, another replica of a PostgreSQL
//! store), is compiled in the background as soon as the runtime sees it, so no call starts a compile; a call
//! that arrives during one waits for that compile (compile_cache's single flight), never starts another.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::adapter::composite::CompileObserver;
use crate::adapter::{Adapter, Env};
use crate::pack::AdapterKind;
use crate::Runtime;

/// How often the store is looked at for composites to compile (one read of its state, cached by the store).
const LOOK_EVERY: Duration = Duration::from_millis(300);

impl Runtime {
    /// Tells `observer` of every compile this runtime's composite adapter does (`hcpx serve` logs them).
    pub fn with_compile_observer(mut self, observer: CompileObserver) -> Runtime {
        self.composite.observe_compiles(Some(observer));
        self
    }

    /// Starts (once) the loop that compiles, in the background, every activated composite whose component this
    /// runtime has not prepared: at start, then as the store changes. It needs a tokio runtime and ends when
    /// this runtime is dropped.
    pub fn keep_compiled(self: Arc<Self>) {
        if self.composite.warming.swap(true, Ordering::SeqCst)
            || tokio::runtime::Handle::try_current().is_err()
        {
            return;
        }
        let rt = Arc::downgrade(&self);
        tokio::spawn(async move {
            // Each pack's component digest tried, so a component that does not load is tried once, not at
            // every look (its calls say why).
            let mut tried: HashMap<String, String> = HashMap::new();
            loop {
                let Some(rt) = rt.upgrade() else { return };
                let looked = tokio::task::spawn_blocking(move || {
                    rt.compile_activated(&mut tried);
                    tried
                })
                .await;
                match looked {
                    Ok(t) => tried = t,
                    Err(_) => return,
                }
                tokio::time::sleep(LOOK_EVERY).await;
            }
        });
    }

    /// Prepares (compiling when the cache does not hold it) each activated composite not yet tried at its
    /// current digest. Blocks.
    fn compile_activated(&self, tried: &mut HashMap<String, String>) {
        let Ok(state) = self.store.state() else { return };
        for (id, st) in &state.packs {
            let Some(sha) = st.component_sha256.as_deref() else { continue };
            if !st.activated_for_any() || tried.get(id).is_some_and(|t| t == sha) {
                continue;
            }
            tried.insert(id.clone(), sha.to_string());
            if self.composite.is_prepared(id, sha) {
                continue;
            }
            let (Ok(Some(pack)), Ok(sandbox)) = (self.pack(id, st), self.store.sandbox()) else { continue };
            if pack.kind != AdapterKind::Composite {
                continue;
            }
            let layout = self.store.layout();
            let env = Env { layout: &layout, sandbox: &sandbox, component_sha256: Some(sha) };
            // Whether it loads is its calls' finding (and the compile observer's line).
            let _ = self.composite.runnable(&pack, env);
        }
    }
}

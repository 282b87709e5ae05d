//! `hcpx doctor`: health of the runtime and the store. Exit 0 healthy, 2 degraded but usable, 1 broken.

use serde_json::{json, Value};

use super::{exit, open_store, JsonFlag};
use crate::output::Printer;
use hcpx::adapter::wrap::resolve_bin;

/// Runs `hcpx doctor`.
pub fn run(a: &JsonFlag) -> anyhow::Result<u8> {
    let p = Printer::new(a.json);
    let store = open_store()?;
    let mut checks: Vec<Value> = Vec::new();
    let mut add = |name: &str, level: &str, detail: String| checks.push(json!({ "check": name, "status": level, "detail": detail }));
    add("store", "ok", format!("HCP_HOME is {}", store.home().display()));
    match store.write_atomic("tmp/doctor-probe", b"ok") {
        Ok(()) => add("writable", "ok", "the store accepts atomic writes".into()),
        Err(e) => add("writable", "error", e.to_string()),
    }
    let _ = std::fs::remove_file(store.path("tmp/doctor-probe"));
    let state = store.state();
    match &state {
        Ok(s) => add("state", "ok", format!("{} pack(s) installed", s.packs.len())),
        Err(e) => add("state", "error", e.to_string()),
    }
    let sandbox = store.sandbox();
    match &sandbox {
        Ok(s) => add("sandbox", "ok", format!("{} bin(s) allow-listed; limits {:?}", s.allow.len(), s.limits())),
        Err(e) => add("sandbox", "error", e.to_string()),
    }
    match store.local_grants() {
        Ok(None) => add("grants", "ok", "no grants.json: the local Principal holds every grant".into()),
        Ok(Some(g)) => add("grants", "ok", format!("{} grant(s) in grants.json", g.len())),
        Err(e) => add("grants", "error", e.to_string()),
    }
    if let Err(e) = store.audit() {
        add("audit", "error", e.to_string());
    }
    if let (Ok(state), Ok(sandbox)) = (&state, &sandbox) {
        for id in state.packs.keys() {
            match store.load_pack(id) {
                Ok(Some(pack)) => match &pack.wrap {
                    Some(w) => match resolve_bin(&pack, w, sandbox) {
                        Ok(_) => add(&format!("pack {id}"), "ok", "loads and its bin can run".into()),
                        Err((_, msg)) => add(&format!("pack {id}"), "warning", msg),
                    },
                    None if pack.kind == hcpx::pack::AdapterKind::Composite => {
                        match hcpx::adapter::composite::CompositeAdapter::new().runnable(&store, &pack, sandbox) {
                            Ok(()) => add(&format!("pack {id}"), "ok", "loads and its component can run".into()),
                            Err(msg) => add(&format!("pack {id}"), "warning", msg),
                        }
                    }
                    None => add(&format!("pack {id}"), "warning", format!("kind {} cannot be executed by this runtime", pack.kind.as_str())),
                },
                Ok(None) => add(&format!("pack {id}"), "error", "recorded as installed but missing from the store; reinstall it".into()),
                Err(e) => add(&format!("pack {id}"), "error", e.to_string()),
            }
        }
    }
    let worst = if checks.iter().any(|c| c["status"] == "error") {
        "error"
    } else if checks.iter().any(|c| c["status"] == "warning") {
        "warning"
    } else {
        "ok"
    };
    if p.json {
        p.json_doc(&json!({ "ok": worst != "error", "status": worst, "checks": checks }));
    } else {
        for c in &checks {
            p.data(&format!("{:<8} {}: {}", c["status"].as_str().unwrap_or(""), c["check"].as_str().unwrap_or(""), c["detail"].as_str().unwrap_or("")));
        }
    }
    Ok(match worst {
        "error" => exit::FAILURE,
        "warning" => exit::USAGE,
        _ => exit::OK,
    })
}

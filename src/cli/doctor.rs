//! `hcpx doctor`: health of the runtime and the store. Exit 0 healthy, 2 degraded but usable, 1 broken.

use serde_json::{json, Value};

use super::{exit, open_store};
use crate::output::Printer;
use hcpx::runtime::Runtime;

/// Runs `hcpx doctor`.
pub fn run(p: &Printer) -> anyhow::Result<u8> {
    let store = open_store()?;
    let mut checks: Vec<Value> = Vec::new();
    let mut add = |name: &str, level: &str, detail: String| {
        checks.push(json!({ "check": name, "status": level, "detail": detail }))
    };
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
        Ok(s) => {
            let l = s.limits();
            add("sandbox", "ok", format!("{} bin(s) allow-listed; per call: timeout {} ms, output {} bytes per stream, composite memory {} MiB", s.allow.len(), l.timeout_ms, l.max_output_bytes, l.memory_mb))
        }
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
    // Each confinement layer a wrap call gets on this kernel under this sandbox.json.
    let cfg = sandbox.as_ref().map(|s| (**s).clone()).unwrap_or_default();
    let layers = hcpx::sandbox::KernelProbe::get().doctor_layers(&cfg);
    for l in &layers {
        let level = match l.status {
            hcpx::model::LayerStatus::Enforced => "ok",
            _ if cfg.requires_full() => "error",
            _ => "warning",
        };
        add(&format!("sandbox {}", l.name.as_str()), level, format!("{}: {}", l.status.as_str(), l.detail));
    }
    if let (Ok(state), Ok(_)) = (&state, &sandbox) {
        // The same four flags every face reports (Runtime::availability), for the local Principal.
        let principal = super::exec::local_principal(&store)?;
        let runtime = Runtime::new(store.clone());
        for id in state.packs.keys() {
            let av = runtime.availability(&principal, id);
            let name = format!("pack {id}");
            if !av.installed {
                let why = av.notes.get("installed").and_then(|v| v.as_str()).unwrap_or("it does not load");
                add(&name, "error", why.to_string());
            } else if !av.runnable {
                add(
                    &name,
                    "warning",
                    av.notes.get("runnable").and_then(|v| v.as_str()).unwrap_or("it cannot run").to_string(),
                );
            } else {
                add(&name, "ok", "loads and can run".into());
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
        p.json_doc(
            &json!({ "ok": worst != "error", "status": worst, "checks": checks, "sandbox_layers": layers }),
        );
    } else {
        for c in &checks {
            p.data(&format!(
                "{:<8} {}: {}",
                c["status"].as_str().unwrap_or(""),
                c["check"].as_str().unwrap_or(""),
                c["detail"].as_str().unwrap_or("")
            ));
        }
    }
    Ok(match worst {
        "error" => exit::FAILURE,
        "warning" => exit::WARNING,
        _ => exit::OK,
    })
}

//! The escape suite: a pack author, a caller or an agent tries to get out of a wrap's (or a composite's)
//! confinement, and each test fails if the attack succeeds. docs/security.md names each test beside its layer.
//! A test that needs a layer this kernel lacks is skipped with a printed reason, never silently.

use hcpx::sandbox::{KernelProbe, LayerStatus};
use hcpx::store::config::SandboxConfig;

/// Whether this kernel enforces layer `name` for a plain call; prints why a test is skipped when not.
pub fn layer(name: &str) -> bool {
    let layers = KernelProbe::get().doctor_layers(&SandboxConfig::default());
    let found = layers.iter().find(|l| l.name.as_str() == name);
    match found {
        Some(l) if l.status == LayerStatus::Enforced => true,
        Some(l) => {
            eprintln!("skipped: layer {name} is {:?} here: {}", l.status, l.detail);
            false
        }
        None => {
            eprintln!("skipped: no layer {name}");
            false
        }
    }
}

/// `HCP_SANDBOX` a plain call gets here: `sandbox` when this kernel enforces every layer.
pub fn expected_mode() -> &'static str {
    let layers = KernelProbe::get().doctor_layers(&SandboxConfig::default());
    let relevant = layers.iter().filter(|l| l.name.as_str() != "mount-namespace");
    if relevant.clone().all(|l| l.status == LayerStatus::Enforced) {
        "sandbox"
    } else {
        "native-local"
    }
}

/// A unique `sleep` duration (seconds, with a fraction no other process uses), to find a test's processes by
/// their command line whatever PID namespace they were started in.
pub fn token() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    format!("3{}.{:09}{}", std::process::id() % 1000, nanos, N.fetch_add(1, Ordering::Relaxed))
}

/// Live (not zombie) processes whose command line holds `token`.
pub fn survivors(token: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else { continue };
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        if String::from_utf8_lossy(&cmd).contains(token) && !stat.contains(") Z ") {
            out.push(pid);
        }
    }
    out
}

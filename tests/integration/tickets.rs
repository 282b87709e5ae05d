//! The tickets example packs (issue #36 point 7, docs/packs.md): one HTTP API with a bound credential, called by
//! a wrap over curl (packs/tickets) and by a composite over wasi:http (packs/tickets-composite). Each pack's
//! proof.sh, run as scripts/main.sh runs it, makes a throwaway CA, starts the example API (packs/tickets/
//! server.py) on a free loopback port and checks the commands, the confirm gate, every eval case, that the API
//! saw the real token, and that nothing hcpx printed or audited holds it.

use std::process::Command;

use crate::escape::layer;
use crate::helpers::{repo, TestDir};

/// Runs `packs/PACK/proof.sh` with this build's hcpx and a fresh HCP_HOME; asserts it passed.
fn proof(pack: &str) {
    let t = TestDir::new();
    let out = Command::new("bash")
        .arg(repo().join("packs").join(pack).join("proof.sh"))
        .env("HCPX", env!("CARGO_BIN_EXE_hcpx"))
        .env("HCP_HOME", t.join("home"))
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{pack} proof failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains(&format!("{pack} proof: ok")), "{stdout}");
}

#[test]
fn the_tickets_wrap_proof_passes_against_a_local_https_api() {
    // A wrap reaches hosts only through its call's proxy, which needs the connect supervisor (seccomp).
    if !layer("seccomp") {
        return;
    }
    proof("tickets");
}

#[test]
fn the_tickets_composite_proof_passes_against_a_local_https_api() {
    proof("tickets-composite");
}

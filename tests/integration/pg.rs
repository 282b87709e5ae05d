//! A real PostgreSQL for the tests (provisional: the lead's dev harness until the shared one lands).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A server binary of Debian's `postgresql` package (or a client on PATH).
pub fn bin(name: &str) -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|d| d.flatten().map(|e| e.path().join("bin").join(name)).filter(|p| p.exists()).collect())
        .unwrap_or_default();
    found.sort();
    found.pop().unwrap_or_else(|| PathBuf::from(name))
}

/// A fresh empty database on the dev cluster named by `HCPX_TEST_PG` (host:port).
pub fn fresh_database() -> Option<String> {
    static N: AtomicUsize = AtomicUsize::new(0);
    let base = std::env::var("HCPX_TEST_PG").ok()?;
    let name = format!("t{}_{}", std::process::id(), N.fetch_add(1, Ordering::SeqCst));
    let admin = format!("postgres://postgres@{base}/postgres");
    let out = std::process::Command::new(bin("psql"))
        .args(["-X", "-q", "-d", &admin, "-c", &format!("CREATE DATABASE {name}")])
        .output()
        .ok()?;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    Some(format!("postgres://postgres@{base}/{name}"))
}

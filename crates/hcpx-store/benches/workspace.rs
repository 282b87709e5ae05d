//! Why: what keeping a `workspace`-mode pack's directory in PostgreSQL adds to a call (#38 point 3), measured
//! in-process and interleaved call by call so a loaded machine weighs on every row alike. Before, such a call
//! took the workspace's turn (an advisory lock) and ran in the replica's own directory; now it also brings the
//! copy to the stored version (a query of the row's head, and the archive when the copy is behind) and stores
//! the directory after the call when it changed. The workspace is small, as a ledger's: a 1 KiB JSON file and a
//! directory. Rows: the turn alone (before), with the workspace kept (now), for a call that changes nothing, one
//! that changes the file, and one that changes it with the calls alternating between two replicas' homes (each
//! copy one version behind: the archive fetched and written out every call, the worst case).
//! Run: `WS_BENCH_URL=postgres://… cargo bench -p hcpx-store --bench workspace` (benches/workspace_store.sh
//! starts a throwaway cluster and does this); `WS_BENCH_N` calls a row (default 400).

// A bench, not library code: it stops at the first thing that goes wrong and prints its table.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;
use std::time::{Duration, Instant};

use hcpx_store::Store;

const TENANT: &str = "bench";

/// One call's hold on the workspace of `pack` (each row its own): before (the turn alone), or now (the turn,
/// checkout and checkin).
fn call(store: &Store, ws: &Path, pack: &str, kept: bool, change: Option<usize>) -> Duration {
    let t = Instant::now();
    let turn = store.workspace_turn(ws, TENANT, pack, Duration::from_secs(5)).unwrap().unwrap();
    let checkout = if kept { store.workspace_checkout(ws, TENANT, pack).unwrap() } else { None };
    if let Some(i) = change {
        let dir = ws.join(pack);
        std::fs::create_dir_all(&dir).unwrap();
        let body = format!("{{\"balance\":\"{i}.00\",\"entries\":[{}]}}", "0,".repeat(480) + "0");
        std::fs::write(dir.join("ledger.json"), body).unwrap();
    }
    if let Some(c) = checkout {
        store.workspace_checkin(c, 64).unwrap();
    }
    drop(turn);
    t.elapsed()
}

fn main() {
    let Ok(url) = std::env::var("WS_BENCH_URL") else {
        eprintln!("workspace bench: set WS_BENCH_URL to a PostgreSQL database it may write (benches/workspace_store.sh)");
        return;
    };
    let n: usize = std::env::var("WS_BENCH_N").ok().and_then(|v| v.parse().ok()).unwrap_or(400);
    let t = tempfile::tempdir().unwrap();
    let (ha, hb) = (t.path().join("a"), t.path().join("b"));
    let (a, b) = (Store::open_db(&ha, &url).unwrap(), Store::open_db(&hb, &url).unwrap());
    let (wa, wb) = (ha.join("tenants/bench/workspaces"), hb.join("tenants/bench/workspaces"));
    let rows = [
        "before: the turn alone, no change",
        "before: the turn alone, a change",
        "now: no change",
        "now: a change",
        "now: a change, alternating replicas",
    ];
    let mut ms: Vec<Vec<f64>> = vec![Vec::new(); rows.len()];
    let mut v = 0;
    for i in 0..n + 20 {
        let mut next = || {
            v += 1;
            Some(v)
        };
        let took = [
            call(&a, &wa, "before-ro", false, None),
            call(&a, &wa, "before-rw", false, next()),
            call(&a, &wa, "now-ro", true, if i == 0 { next() } else { None }),
            call(&a, &wa, "now-rw", true, next()),
            if i % 2 == 0 {
                call(&a, &wa, "now-alt", true, next())
            } else {
                call(&b, &wb, "now-alt", true, next())
            },
        ];
        // The first calls warm the pool, the caches and the rows (the first writes the read-only row's file).
        if i >= 20 {
            for (row, d) in ms.iter_mut().zip(took) {
                row.push(d.as_secs_f64() * 1000.0);
            }
        }
    }
    let p = |v: &mut Vec<f64>, q: f64| {
        v.sort_by(|x, y| x.total_cmp(y));
        v[((v.len() - 1) as f64 * q) as usize]
    };
    let base: Vec<f64> = ms.iter_mut().map(|r| p(r, 0.5)).collect();
    println!("| call | p50 | p90 | p50 added (over the turn alone, same change) |");
    println!("|---|---:|---:|---:|");
    for (i, (row, name)) in ms.iter_mut().zip(rows).enumerate() {
        let added = match i {
            2 => format!("{:+.3} ms", base[2] - base[0]),
            3 | 4 => format!("{:+.3} ms", base[i] - base[1]),
            _ => String::new(),
        };
        println!("| {name} | {:.3} ms | {:.3} ms | {added} |", p(row, 0.5), p(row, 0.9));
    }
}

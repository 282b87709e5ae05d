//! `hcpx-serve`: the HTTP face as a binary of its own, which `hcpx serve` runs (its HTTP stack stays out of
//! every other command's start-up). Serves until SIGTERM or SIGINT, then finishes the calls in flight.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use hcpx_cli::{ServeArgs, ServeCli};
use hcpx_http::{serve, AccessLog, Metrics, ServeConfig};
use hcpx_runtime::Runtime;
use hcpx_store::pg::fleet::Announce;
use hcpx_store::Store;

fn fail(message: &str) -> ExitCode {
    let _ = writeln!(std::io::stderr().lock(), "error: {message}");
    ExitCode::from(1)
}

/// The most the flags handed over may be.
const MAX_HANDED_OVER: u64 = 1 << 20;

/// The flags: as `hcpx serve` handed them over, parsed, or parsed here from this binary's own command line
/// (the same clap type). Usage errors, `--help` and `--version` are answered here, as clap words them.
fn flags() -> Result<ServeArgs, ExitCode> {
    // clap answers a usage error, `--help` and `--version` itself, and exits with its code.
    let cli = ServeCli::parse();
    let Some(fd) = cli.args_fd else { return Ok(cli.args) };
    handed_over(fd).map_err(|e| fail(&format!("cannot read the flags `hcpx serve` handed over on descriptor {fd}: {e}; run `hcpx serve`, not this binary, with --args-fd")))
}

/// Reads the flags `hcpx serve` wrote, as JSON, to the file open at `fd`, and closes it.
fn handed_over(fd: i32) -> Result<ServeArgs, String> {
    use std::io::Read;
    use std::os::fd::FromRawFd;
    // SAFETY: F_GETFD only reads a descriptor's flags; it tells an open descriptor from a closed one.
    if fd < 3 || unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
        return Err("it is not an open file".into());
    }
    // SAFETY: `fd` is open (checked above) and nothing else in this process owns it: `hcpx serve` opened it
    // for this binary alone, and nothing here has opened a file yet. The `File` closes it when dropped.
    let file = unsafe { std::fs::File::from_raw_fd(fd) };
    let mut text = String::new();
    file.take(MAX_HANDED_OVER).read_to_string(&mut text).map_err(|e| hcpx_model::io_reason(&e))?;
    serde_json::from_str(&text).map_err(|e| format!("it holds no flags ({e})"))
}

/// How many tenants `/metrics` names before it folds the rest into `_other`: `HCP_METRICS_MAX_TENANTS`, else
/// the default.
fn metrics_max_tenants() -> Result<usize, String> {
    match std::env::var("HCP_METRICS_MAX_TENANTS") {
        Ok(v) if !v.trim().is_empty() => match v.trim().parse::<usize>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(format!(
                "HCP_METRICS_MAX_TENANTS is {v:?}, not a whole number from 1; set it to how many tenants /metrics names (default {}), or unset it",
                hcpx_http::METRICS_MAX_TENANTS
            )),
        },
        _ => Ok(hcpx_http::METRICS_MAX_TENANTS),
    }
}

/// Resolves on SIGTERM or SIGINT, once it has logged that the server drains: a JSON line like the access
/// log's, `{"event":"draining",…}`, saying `/readyz` answers 503 from now and when the server stops taking
/// connections.
async fn stop_signal(drain: Duration) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
    else {
        return std::future::pending().await;
    };
    let name = tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    };
    let secs = drain.as_secs_f64();
    let line = serde_json::json!({
        "at": hcpx_model::clock::now_rfc3339(),
        "event": "draining",
        "signal": name,
        "drain_s": secs,
        "message": format!("draining: {name} received, /readyz answers 503, stopping in {secs} s (then in-flight calls finish)"),
    });
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

fn main() -> ExitCode {
    let f = match flags() {
        Ok(f) => f,
        Err(code) => return code,
    };
    let cfg = ServeConfig {
        max_body_bytes: f.max_body_bytes,
        allow_hosts: f.allow_hosts.clone(),
        grace: Duration::from_millis(f.grace_ms),
        drain: Duration::from_millis(f.drain_ms),
        header_timeout: Duration::from_millis(f.header_timeout_ms.max(1)),
    };
    let store = match Store::open_chosen(f.store.as_deref()) {
        Ok(s) => s,
        Err(e) => return fail(&e.to_string()),
    };
    if let Err(e) = store.principals() {
        return fail(&format!("{e}; the server would refuse every token"));
    }
    // Which store this replica serves, named once it listens (the database with its password masked).
    let serving = match store.db() {
        Some(_) => format!(
            "hcpx serve: store: postgres {} (this replica's local cache: HCP_HOME {})",
            store.shown(),
            store.home().display()
        ),
        None => format!("hcpx serve: store: files under HCP_HOME {}", store.home().display()),
    };
    let fleet = store.db().cloned();
    let metrics = match metrics_max_tenants() {
        Ok(max) => Arc::new(Metrics::with_max_tenants(max)),
        Err(e) => return fail(&e),
    };
    let mut runtime = Runtime::new(store)
        .with_max_calls(f.max_calls)
        .with_observer(metrics.clone())
        .with_compile_observer(Arc::new(log_compile));
    // Traces, when the operator names a collector (`OTEL_EXPORTER_OTLP_*`); a setting that does not parse
    // stops the server here rather than leaving it untraced unseen.
    let tracer = match hcpx_runtime::trace::TraceConfig::from_env() {
        Ok(None) => None,
        Ok(Some(cfg)) => match hcpx_runtime::trace::Tracer::start(cfg) {
            Ok(t) => Some(Arc::new(t)),
            Err(e) => return fail(&format!("cannot start the trace exporter: {e}")),
        },
        Err(e) => return fail(&format!("traces: {e}")),
    };
    if let Some(t) = &tracer {
        runtime = runtime.with_tracer(t.clone());
    }
    let runtime = Arc::new(runtime);
    // A long-lived server reuses emptied wrap TMPDIRs (hcpx-sandbox's calltmp.rs), removed before it exits.
    hcpx_runtime::adapter::wrap::reuse_tmpdirs(true);
    let tokio = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(t) => t,
        Err(e) => return fail(&format!("cannot start the async runtime: {e}")),
    };
    let noted = fleet.clone();
    let ran = tokio.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&f.listen).await.map_err(|e| {
            hcpx_http::ServeError::Listen { addr: f.listen.clone(), reason: hcpx_model::io_reason(&e) }
        })?;
        let addr = listener.local_addr().map(|a| a.to_string()).unwrap_or(f.listen.clone());
        // On a database, the replica notes itself (hcpx doctor lists it) before it says it listens.
        if let Some(db) = &noted {
            let me = Announce { listen: addr.clone(), version: env!("CARGO_PKG_VERSION").to_string() };
            if let Err(e) = db.announce(me) {
                let _ = writeln!(std::io::stderr().lock(), "hcpx serve: cannot note this replica in the database ({e}); hcpx doctor will not list it");
            }
        }
        // The one line a supervisor (or a test) waits for, first: where the server listens.
        let _ = writeln!(std::io::stderr().lock(), "hcpx serve: listening on http://{addr}");
        let _ = writeln!(std::io::stderr().lock(), "{serving}");
        let drain = cfg.drain;
        // Activated composites are compiled in the background, at start and as other processes install or
        // activate them, so no call starts a compile.
        runtime.clone().keep_compiled();
        serve(listener, runtime, metrics, cfg, AccessLog::stderr(), stop_signal(drain)).await
    });
    hcpx_runtime::adapter::wrap::reuse_tmpdirs(false);
    // Stopped on purpose: it leaves the replicas' table rather than be taken for one that went quiet.
    if let Some(db) = &fleet {
        let _ = db.withdraw();
    }
    // The spans of the last calls go out before the process ends (a dead collector waits no longer than this).
    if let Some(t) = &tracer {
        t.flush(Duration::from_secs(5));
    }
    match ran {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e.to_string()),
    }
}

/// The log's line for a compile this server did (the background compile of a composite installed or activated,
/// or one a call found missing): one JSON line on standard error, as the access log's are, in one write.
fn log_compile(e: &hcpx_runtime::adapter::composite::CompileEvent<'_>) {
    use hcpx_runtime::adapter::composite::Step;
    let (event, bytes, ms) = match e.step {
        Step::Compiling { bytes } => ("compiling", Some(bytes), None),
        Step::Compiled { took } => ("compiled", None, Some(took.as_millis() as u64)),
        Step::Failed { took } => ("compile_failed", None, Some(took.as_millis() as u64)),
    };
    let line = serde_json::json!({
        "at": hcpx_model::clock::now_rfc3339(),
        "event": event,
        "pack": e.pack_id,
        "component_sha256": e.component_sha256,
        "bytes": bytes,
        "ms": ms,
    });
    let _ = std::io::stderr().lock().write_all(format!("{line}\n").as_bytes());
}

//! `hcpx-serve`: the HTTP face as a binary of its own, which `hcpx serve` runs (its HTTP stack stays out of
//! every other command's start-up). Serves until SIGTERM or SIGINT, then finishes the calls in flight.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use hcpx::runtime::Runtime;
use hcpx::serve::{serve, AccessLog, Metrics, ServeConfig};
use hcpx::store::Store;

fn fail(message: &str) -> ExitCode {
    let _ = writeln!(std::io::stderr().lock(), "error: {message}");
    ExitCode::from(1)
}

/// The flags `hcpx serve` passes on.
struct Flags {
    listen: String,
    max_calls: usize,
    cfg: ServeConfig,
}

fn flags() -> Result<Flags, String> {
    let mut f = Flags { listen: "127.0.0.1:8420".into(), max_calls: 64, cfg: ServeConfig::default() };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value =
            || args.next().ok_or_else(|| format!("{flag} needs a value; run `hcpx serve --help`"));
        let number = |v: String| v.parse::<usize>().map_err(|_| format!("{flag} takes a number, not {v:?}"));
        match flag.as_str() {
            "--listen" => f.listen = value()?,
            "--max-calls" => f.max_calls = number(value()?)?,
            "--max-body-bytes" => f.cfg.max_body_bytes = number(value()?)?,
            "--allow-host" => f.cfg.allow_hosts.push(value()?),
            // The store is chosen where every face chooses it (`Store::open_default`), from HCP_STORE, which
            // `hcpx serve --store` sets; the flag stays for who runs this binary directly.
            "--store" => std::env::set_var("HCP_STORE", value()?),
            "--grace-ms" => f.cfg.grace = std::time::Duration::from_millis(number(value()?)? as u64),
            "--drain-ms" => f.cfg.drain = std::time::Duration::from_millis(number(value()?)? as u64),
            "--header-timeout-ms" => {
                let ms = number(value()?)?.max(1);
                f.cfg.header_timeout = std::time::Duration::from_millis(ms as u64);
            }
            _ => return Err(format!("unexpected argument {flag:?}; run `hcpx serve --help`")),
        }
    }
    Ok(f)
}

/// Resolves on SIGTERM or SIGINT.
async fn stop_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
    else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

fn main() -> ExitCode {
    let f = match flags() {
        Ok(f) => f,
        Err(e) => return fail(&e),
    };
    let store = match Store::open_default() {
        Ok(s) => s,
        Err(e) => return fail(&e.to_string()),
    };
    if let Err(e) = store.principals() {
        return fail(&format!("{e}; the server would refuse every token"));
    }
    let metrics = Arc::new(Metrics::new());
    let runtime = Arc::new(Runtime::new(store).with_max_calls(f.max_calls).with_observer(metrics.clone()));
    let tokio = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(t) => t,
        Err(e) => return fail(&format!("cannot start the async runtime: {e}")),
    };
    let ran = tokio.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&f.listen).await.map_err(|e| {
            hcpx::serve::ServeError::Listen { addr: f.listen.clone(), reason: hcpx::model::io_reason(&e) }
        })?;
        let addr = listener.local_addr().map(|a| a.to_string()).unwrap_or(f.listen.clone());
        // The one line a supervisor (or a test) waits for: where the server listens.
        let _ = writeln!(std::io::stderr().lock(), "hcpx serve: listening on http://{addr}");
        serve(listener, runtime, metrics, f.cfg, AccessLog::stderr(), stop_signal()).await
    });
    match ran {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e.to_string()),
    }
}

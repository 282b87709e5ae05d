//! The wrap adapter: a native CLI spawned from rendered argv, never a shell, in its workspace, with a built
//! environment. The allow-list is checked here: a bare bin runs only when `sandbox.json` allows it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::workspace;
use super::{Adapter, AdapterResult, Call, Env, NoHooks, OwnedCall, RunFuture};
use crate::model::{Code, Denial};
use crate::pack::{Bin, Pack, WorkspaceMode, WrapTarget};
use crate::render::{cli_selects_json, render_argv};
use crate::sandbox::gitguard;
use crate::sandbox::spawn::{self, Spawn};
use crate::sandbox::{workdir_writable, Confinement, KernelProbe, WrapView};
use crate::store::config::SandboxConfig;

/// `PATH` as the child sees it.
pub const CHILD_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Runs `kind: wrap` packs.
pub struct WrapAdapter;

/// In a long-lived server: turns on (`true`) the reuse of emptied wrap TMPDIRs, or turns it off and removes the
/// ones kept (`false`, before the server exits). See hcpx-sandbox's calltmp.rs for when a directory is reused.
pub fn reuse_tmpdirs(on: bool) {
    if on {
        crate::sandbox::calltmp::start_reuse();
    } else {
        crate::sandbox::calltmp::stop_reuse();
    }
}

impl Adapter for WrapAdapter {
    fn run(&self, call: &Call<'_>) -> AdapterResult {
        run_wrap(call).unwrap_or_else(AdapterResult::from)
    }

    /// The spawn and the wait for the child block, so the whole call runs on tokio's blocking pool, which owns
    /// its inputs until the child is gone; a cancelled call's process group is killed from there.
    fn run_async(&self, call: Arc<dyn OwnedCall>) -> RunFuture<'_> {
        Box::pin(async move {
            let ran = tokio::task::spawn_blocking(move || {
                run_wrap(&call.call(&NoHooks)).unwrap_or_else(AdapterResult::from)
            });
            match ran.await {
                Ok(out) => out,
                Err(e) => AdapterResult::fail(Code::AdapterFailed, format!("the call's thread failed: {e}")),
            }
        })
    }

    fn plan(&self, call: &Call<'_>) -> Result<super::Plan, Denial> {
        let wrap = target(call.pack)?;
        let program = resolve_bin(call.pack, wrap, call.env.sandbox)?;
        let argv = argv_for(call, wrap)?;
        let (workdir, workdir_writable) = super::workdir_words(call, wrap.workspace);
        let placeholders = super::egress::placeholders(call.pack, call.binding)?;
        // The proxy and CA variables a run would set, named as a run names them (the port and file are per call).
        let proxy = egress_of(call, wrap, &placeholders).planned()?;
        let ca_file = proxy.filter(|terminates| *terminates).map(|_| PathBuf::from(CA_FILE));
        let net = ChildNet { placeholders, ca_file };
        let env = child_env(call, wrap, &net, Path::new(""), Path::new(""), "", proxy.map(|_| 0))
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        Ok(super::Plan { program: program.display().to_string(), argv, workdir, workdir_writable, env })
    }

    fn runnable(&self, pack: &Pack, env: Env<'_>) -> Result<(), Denial> {
        let wrap = target(pack)?;
        resolve_bin(pack, wrap, env.sandbox)?;
        crate::sandbox::network_granted(&pack.id, &wrap.network, env.sandbox)
            .and_then(|()| crate::sandbox::sockets_granted(&pack.id, &wrap.unix_sockets, env.sandbox))
            .map_err(|r| Denial::new(Code::SandboxDenied, r.0))
    }
}

/// The call's confinement on this kernel, refused when `sandbox.json` requires full confinement and a layer
/// does not hold.
fn plan(view: &WrapView<'_>, sandbox: &SandboxConfig, probe: &KernelProbe) -> Result<Confinement, Denial> {
    let confinement =
        Confinement::for_wrap(view, sandbox, probe).map_err(|r| Denial::new(Code::SandboxDenied, r.0))?;
    if sandbox.requires_full() && !confinement.full() {
        return Err(Denial::new(
            Code::SandboxDenied,
            format!(
                "sandbox: sandbox.json requires full confinement and this call cannot get it: {}; it stays refused until every layer applies: run hcpx doctor to see which one is missing and why (the kernel, or a layer named in sandbox.json `disable`)",
                confinement.missing().join("; ")
            ),
        ));
    }
    Ok(confinement)
}

/// The pack's wrap target, which a linted `kind: wrap` pack always has.
fn target(pack: &Pack) -> Result<&WrapTarget, Denial> {
    pack.wrap
        .as_ref()
        .ok_or_else(|| Denial::new(Code::AdapterFailed, format!("pack {} has no wrap target", pack.id)))
}

/// The argv that follows the bin: the named command rendered from its arguments, or a pass-through
/// subcommand and its words (with the pack's JSON flag unless the words already select JSON).
fn argv_for(call: &Call<'_>, wrap: &WrapTarget) -> Result<Vec<String>, Denial> {
    match call.command {
        Some(cmd) => {
            render_argv(wrap, cmd, call.args).map_err(|e| Denial::new(Code::InvalidArgs, e.to_string()))
        }
        None => {
            let mut a = vec![call.verb_key.to_string()];
            a.extend(call.pass_argv.iter().cloned());
            if !cli_selects_json(call.pass_argv) {
                a.extend(wrap.json_flag.iter().cloned());
            }
            Ok(a)
        }
    }
}

fn run_wrap(call: &Call<'_>) -> Result<AdapterResult, Denial> {
    let wrap = target(call.pack)?;
    // Lint refuses these names; a pack that reaches here with one anyway is refused again.
    if let Some((k, family)) =
        wrap.agent_env.keys().find_map(|k| crate::pack::env_deny::denied_env(k).map(|f| (k, f)))
    {
        return Err(Denial::new(Code::SandboxDenied, format!("sandbox: pack {} sets agent_env {k}, one of {family} settings a pack may not set; remove it and reinstall", call.pack.id)));
    }
    let sandbox = call.env.sandbox;
    let program = resolve_bin(call.pack, wrap, sandbox)?;
    let argv = argv_for(call, wrap)?;
    let mut work = workspace::prepare(call.env.layout, call.pack, wrap.workspace, call.project_dir, true)?;
    let cwd = work
        .dir
        .as_ref()
        .ok_or_else(|| Denial::new(Code::AdapterFailed, "internal: the working directory was not opened"))?;
    if let Some(cmd) = call.command {
        check_paths(cmd, call.args, cwd)?;
    }
    let limits = sandbox.limits();
    let probe = KernelProbe::get();
    let (project, writable) =
        (wrap.workspace == WorkspaceMode::Project, workdir_writable(wrap.workspace, call.write));
    if project && writable {
        crate::sandbox::ready_git_guard(&work.path);
    }
    // Host-bound fields: the child sees a placeholder, never the value (issue #36 point 5).
    let placeholders = super::egress::placeholders(call.pack, call.binding)?;
    // The command's allowed hosts, through a proxy of this call's own (egress.rs); none: no network from hosts.
    let proxy = egress_of(call, wrap, &placeholders).start()?;
    // A terminating proxy: the child trusts the call's CA, whose certificate only is written to its TMPDIR.
    let ca_file = match proxy.as_ref().and_then(|p| p.ca_pem()) {
        Some(pem) => {
            let file = work.tmpdir.join(CA_FILE);
            std::fs::write(&file, pem).map_err(|e| {
                Denial::new(
                    Code::SandboxDenied,
                    format!("sandbox: the call's certificate authority cannot be written to its TMPDIR ({}): {}; check the disk", file.display(), crate::model::io_reason(&e)),
                )
            })?;
            Some(file)
        }
        None => None,
    };
    let net = ChildNet { placeholders, ca_file };
    let view = WrapView {
        pack_id: &call.pack.id,
        pack_dir: &call.pack.dir,
        program: &program,
        workdir: &work.path,
        workdir_writable: writable,
        home: &work.home,
        tmpdir: &work.tmpdir,
        network: &wrap.network,
        unix_sockets: &wrap.unix_sockets,
        egress: proxy.as_ref().map(|p| p.port()),
        project,
        timeout_ms: limits.timeout_ms,
    };
    let planned = plan(&view, sandbox, &probe)?;
    // A workspace already past the cap (what earlier calls left) runs nothing more until it is emptied.
    if let Some(over) = planned.disk.over() {
        return Err(Denial::new(
            Code::SandboxDenied,
            format!(
                "sandbox: pack {}'s workspace already holds {} MiB, past max_disk_mb ({} MiB) in sandbox.json, so the call did not run; remove what it no longer needs from the workspace, or raise max_disk_mb",
                call.pack.id,
                over.held >> 20,
                over.max_bytes >> 20
            ),
        ));
    }
    // A project without `.git` must not be given one, nor a `.git` what git reads as code (the user's next
    // `git` would run it): what the mounts cannot stop is moved aside after the call.
    let git_watch = (project && writable).then(|| gitguard::GitWatch::before(&work.path));
    if call.hooks.watching() {
        call.hooks.started(call.live_title, &command_line(&program, &argv));
    }
    let run = |c: &Confinement, abi: u8| {
        let env = child_env(call, wrap, &net, &work.home, &work.tmpdir, c.mode().as_str(), c.egress);
        spawn::run(&Spawn {
            program: &program,
            argv: &argv,
            cwd,
            env: &env,
            timeout: Duration::from_millis(limits.timeout_ms),
            max_output: limits.max_output_bytes,
            confine: Some((c, abi)),
            cancel: Some(call.cancel),
        })
    };
    let abi = probe.landlock_abi(sandbox);
    let (confinement, spawned) =
        crate::sandbox::run_confined(planned, |p| plan(&view, sandbox, p), |c| run(c, abi))?;
    if confinement.applies(crate::model::LayerName::PidNamespace) {
        // Its first process reaped, nothing of the call runs any more: a server may reuse its TMPDIR.
        work.call_ended_in_own_pid_namespace(!confinement.unix_sockets.is_empty());
    }
    drop(work);
    // The call is over: its proxy stops, every connection it still held with it, and hands back its requests.
    let egress = proxy.map(super::egress::CallProxy::finish).unwrap_or_default();
    let fin = spawned.map_err(|e| {
        let message = if e.not_runnable {
            format!(
                "sandbox: bin {:?} cannot be run: {}",
                program.display().to_string(),
                crate::model::io_reason(&e.error)
            )
        } else {
            format!(
                "sandbox: {} for {}: {e}; run hcpx doctor to see which layers this kernel allows",
                call.pack.id,
                program.display()
            )
        };
        Denial::new(Code::SandboxDenied, message)
    })?;
    let planted = git_watch.and_then(|w| w.after().err());
    let stdout = String::from_utf8_lossy(&fin.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&fin.stderr).into_owned();
    let trimmed = stdout.trim();
    let result = if trimmed.is_empty() {
        None
    } else {
        Some(serde_json::from_str(trimmed).unwrap_or_else(|_| serde_json::Value::String(stdout.clone())))
    };
    let mut out = AdapterResult {
        sandbox: Some(confinement.report()),
        ok: fin.status.success() && !fin.timed_out && !fin.cancelled,
        result,
        stdout: Some(stdout),
        stderr: Some(stderr.clone()),
        truncated: Some(fin.truncated),
        exit_code: fin.status.code(),
        egress,
        ..AdapterResult::default()
    };
    if fin.cancelled {
        out.ok = false;
        out.code = Some(Code::Cancelled);
        out.error = Some(
            "cancelled: the caller cancelled the call; the command and everything it started were stopped"
                .into(),
        );
    } else if fin.timed_out {
        out.code = Some(Code::Timeout);
        out.error = Some(format!("timed out after {} ms; the command and everything it started were killed (raise timeout_ms in sandbox.json if it needs longer: `hcpx config set timeout_ms MS`)", limits.timeout_ms));
    } else if !fin.status.success() {
        out.code = Some(Code::ExitNonzero);
        let msg = stderr.trim();
        let mut error = if msg.is_empty() { fin.describe_exit() } else { msg.to_string() };
        // A refusal by the kernel under Landlock is most often the default view, not the CLI: say which layer
        // and how the operator lends a path, rather than leave the person to fix cli[].
        if crate::sandbox::hidden::says_denied(msg) && confinement.enforces(crate::model::LayerName::Landlock)
        {
            let lent = sandbox.for_pack(&call.pack.id).map(|e| e.read.clone()).unwrap_or_default();
            let asked = wrap.read_not_lent(&lent);
            error = format!("{error}\n{}", crate::sandbox::hidden::landlock_hint(&call.pack.id, &asked));
        }
        out.error = Some(error);
    }
    if let Some(over) = fin.disk_over {
        out.ok = false;
        out.code = Some(Code::SandboxDenied);
        out.error = Some(format!(
            "sandbox: the command's working directory and TMPDIR held {} MiB, past max_disk_mb ({} MiB) in sandbox.json, and it was stopped; remove what the workspace no longer needs, or raise max_disk_mb if it needs more",
            over.held >> 20,
            over.max_bytes >> 20
        ));
    }
    if let Some(e) = planted {
        out.ok = false;
        out.code = Some(Code::SandboxDenied);
        out.error = Some(format!("sandbox: {e}"));
    }
    Ok(out)
}

/// Every `x-path` argument names something beneath the working directory `dir`: relative, no `..`, and not
/// through a link that leads out (resolved through the directory capability). A path that does not exist yet
/// is allowed (a command may create it) as long as the rest holds.
fn check_paths(
    cmd: &crate::pack::Command,
    args: &serde_json::Map<String, serde_json::Value>,
    dir: &cap_std::fs::Dir,
) -> Result<(), Denial> {
    for (name, prop) in cmd.args.props() {
        if prop.path != Some(true) {
            continue;
        }
        let Some(value) = args.get(name).and_then(|v| v.as_str()) else { continue };
        let refuse = |why: &str| {
            Denial::new(Code::InvalidArgs, format!("argument `{name}` is {value:?}, which {why}; give a path inside the working directory, relative to it (it is a file path: x-path)"))
        };
        let p = Path::new(value);
        if value.is_empty() {
            return Err(refuse("is empty"));
        }
        if p.is_absolute() {
            return Err(refuse("is absolute"));
        }
        if p.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
            return Err(refuse("climbs out with `..`"));
        }
        match dir.metadata(p) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => return Err(refuse("leads out of the working directory through a link")),
        }
    }
    Ok(())
}

/// The program to spawn: a pack bin opened beneath the installed pack, or an allow-listed bare name on PATH.
pub fn resolve_bin(pack: &Pack, wrap: &WrapTarget, sandbox: &SandboxConfig) -> Result<PathBuf, Denial> {
    match &wrap.bin {
        Bin::Path(rel) => {
            let root =
                cap_std::fs::Dir::open_ambient_dir(&pack.dir, cap_std::ambient_authority()).map_err(|e| {
                    Denial::new(
                        Code::SandboxDenied,
                        format!("sandbox: pack directory cannot be opened: {}", crate::model::io_reason(&e)),
                    )
                })?;
            match root.metadata(rel) {
                Ok(m) if m.is_file() => Ok(pack.dir.join(rel)),
                _ => Err(Denial::new(
                    Code::SandboxDenied,
                    format!(
                        "sandbox: bin {rel:?} is not a file inside the installed pack; reinstall the pack"
                    ),
                )),
            }
        }
        Bin::Name(name) => {
            if !sandbox.allows_bin(name) {
                return Err(Denial::new(
                    Code::SandboxDenied,
                    format!("sandbox: bin {name:?} not allowlisted; allow it with `hcpx allow {name}`"),
                ));
            }
            find_on_path(name).ok_or_else(|| {
                Denial::new(
                    Code::SandboxDenied,
                    format!("sandbox: bin {name:?} is allow-listed but not found on PATH; install it"),
                )
            })
        }
    }
}

/// The call's egress, as its proxy is decided.
fn egress_of<'a>(
    call: &'a Call<'a>,
    wrap: &'a WrapTarget,
    placeholders: &'a std::collections::BTreeMap<String, String>,
) -> super::egress::CallEgress<'a> {
    super::egress::CallEgress {
        pack: call.pack,
        network: &wrap.network,
        verb_key: call.verb_key,
        cfg: call.env.sandbox,
        tenant: &call.principal.tenant,
        binding: call.binding,
        placeholders,
    }
}

/// The first executable file named `name` in an absolute directory of `PATH` (the child's PATH when unset).
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH").unwrap_or_else(|| CHILD_PATH.into());
    std::env::split_paths(&path)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(name))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

/// The variables that send a client through a proxy, each set to the call's egress proxy; `NO_PROXY` is never
/// set, so nothing is exempt from it.
const PROXY_VARS: &[&str] =
    &["HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy"];

/// The name of the call CA's certificate in the child's TMPDIR.
const CA_FILE: &str = "hcpx-egress-ca.pem";

/// The variables a client reads its trusted CAs from, each set to the call CA's certificate when the proxy
/// terminates the call's HTTPS (OpenSSL and what builds on it, curl, Python requests, Node, git).
const CA_VARS: &[&str] =
    &["SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO"];

/// What a call's credentials and egress give the child besides the proxy: the placeholder of each host-bound
/// field, and the call CA's certificate file.
#[derive(Default)]
struct ChildNet {
    placeholders: std::collections::BTreeMap<String, String>,
    ca_file: Option<PathBuf>,
}

/// The child's whole environment: built, never inherited. `egress`: the port of the call's egress proxy.
fn child_env(
    call: &Call<'_>,
    wrap: &WrapTarget,
    net: &ChildNet,
    home: &Path,
    tmpdir: &Path,
    mode: &str,
    egress: Option<u16>,
) -> Vec<(String, String)> {
    let mut env = vec![
        ("PATH".to_string(), CHILD_PATH.to_string()),
        ("HOME".to_string(), home.display().to_string()),
        ("TMPDIR".to_string(), tmpdir.display().to_string()),
    ];
    for (k, t) in &wrap.agent_env {
        // A host-bound field's placeholder, never its value; a field without one as before.
        let value = t.fill(|v| {
            let f = v.strip_prefix("binding.")?;
            if call.pack.binding.host_bound().contains(&f) {
                return net.placeholders.get(f).cloned();
            }
            call.binding.fields.get(f).cloned()
        });
        if let Some(v) = value {
            env.retain(|(name, _)| name != k);
            env.push((k.clone(), v));
        }
    }
    env.retain(|(name, _)| name != "HCP_SANDBOX");
    env.push(("HCP_SANDBOX".to_string(), mode.to_string()));
    if let Some(port) = egress {
        env.retain(|(name, _)| {
            !PROXY_VARS.contains(&name.as_str()) && !name.eq_ignore_ascii_case("no_proxy")
        });
        let url = format!("http://127.0.0.1:{port}");
        env.extend(PROXY_VARS.iter().map(|k| (k.to_string(), url.clone())));
        if let Some(ca) = &net.ca_file {
            env.retain(|(name, _)| !CA_VARS.contains(&name.as_str()) && name != "SSL_CERT_DIR");
            env.extend(CA_VARS.iter().map(|k| (k.to_string(), ca.display().to_string())));
            env.push(("SSL_CERT_DIR".to_string(), String::new()));
        }
    }
    env
}

/// The exact command, shell-quoted for display only (it never runs through a shell).
pub fn command_line(program: &Path, argv: &[String]) -> String {
    std::iter::once(program.display().to_string())
        .chain(argv.iter().cloned())
        .map(|a| shell_quote(&a))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Quotes a word for display in a POSIX shell (shlex); a word shlex will not quote (it holds a NUL, which
/// argv never does) is shown as a Rust string literal.
pub fn shell_quote(s: &str) -> String {
    shlex::try_quote(s).map(|q| q.into_owned()).unwrap_or_else(|_| format!("{s:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_quoted_for_display_only() {
        let argv = vec!["a b".to_string(), "it's".to_string(), "--x=1".to_string(), String::new()];
        let line = command_line(Path::new("/usr/bin/jq"), &argv);
        assert_eq!(shlex::split(&line).unwrap(), ["/usr/bin/jq", "a b", "it's", "--x=1", ""]);
        assert_eq!(shell_quote("plain"), "plain");
    }

    #[test]
    fn a_bare_bin_runs_only_when_allow_listed() {
        let pack = Pack::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packs/jq")).unwrap();
        let wrap = pack.wrap.as_ref().unwrap();
        let refused = resolve_bin(&pack, wrap, &SandboxConfig::default()).unwrap_err();
        assert_eq!(refused.code, Code::SandboxDenied);
        assert_eq!(refused.message, "sandbox: bin \"jq\" not allowlisted; allow it with `hcpx allow jq`");
    }
}

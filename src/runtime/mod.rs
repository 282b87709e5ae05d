//! `Runtime::exec`: the seven fail-closed steps of execution.md, in order, for every face.

mod availability;
mod binding;
pub mod bootstrap;
mod envelope;
mod principal;
pub mod scrub;

pub use availability::Availability;

pub use binding::{mint, required_fields, MintedBinding};
pub use envelope::{Code, Envelope, ResultEnvelope};
pub use principal::{Invoker, Principal};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::store::packs::PackState;

use crate::adapter::composite::CompositeAdapter;
use crate::adapter::wrap::WrapAdapter;
use crate::adapter::{Adapter, AdapterResult, Call, ExecHooks, NoHooks};
use crate::args::GATE_ARGS;
use crate::grants::Capability;
use crate::pack::{AdapterKind, Land, Operation, Pack, PolicyRow};
use crate::store::audit::AuditRecord;
use crate::store::Store;

/// The runtime over one store.
pub struct Runtime {
    store: Store,
    project_dir: Option<PathBuf>,
    composite: CompositeAdapter,
    packs: Mutex<HashMap<String, (String, Arc<Pack>)>>,
}

/// The arguments of a call: a JSON object, or command-line words parsed against the command's schema.
pub enum ArgsInput<'a> {
    Json(&'a Map<String, Value>),
    Words(&'a [String]),
}

/// The command a call resolved to (step 1).
enum Resolved<'p> {
    Command(&'p crate::pack::Command),
    PassThrough(PolicyRow),
}

impl Runtime {
    /// A runtime over `store`, with no project directory (a served runtime).
    pub fn new(store: Store) -> Runtime {
        Runtime {
            store,
            project_dir: None,
            composite: CompositeAdapter::new(),
            packs: Mutex::new(HashMap::new()),
        }
    }

    /// For a process that runs one call and exits (the `hcpx exec` CLI): composites allocate on demand
    /// instead of reserving the pooling allocator, which only pays off across many calls.
    pub fn one_shot(mut self) -> Runtime {
        self.composite = CompositeAdapter::one_shot();
        self
    }

    /// Sets the caller's project directory, for `project` mode wraps.
    pub fn with_project_dir(mut self, dir: Option<PathBuf>) -> Runtime {
        self.project_dir = dir;
        self
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Runs one call through the pipeline.
    pub fn exec(&self, principal: &Principal, env: &Envelope) -> ResultEnvelope {
        self.exec_with(principal, env, &NoHooks)
    }

    /// Runs one call, telling `hooks` when the adapter starts.
    pub fn exec_with(&self, principal: &Principal, env: &Envelope, hooks: &dyn ExecHooks) -> ResultEnvelope {
        self.exec_input(principal, env, ArgsInput::Json(&env.args), hooks)
    }

    /// Runs a call whose arguments are command-line words (`k=v`, `k:=json`, bare words); `env.args` is ignored.
    pub fn exec_words(
        &self,
        principal: &Principal,
        env: &Envelope,
        words: &[String],
        hooks: &dyn ExecHooks,
    ) -> ResultEnvelope {
        self.exec_input(principal, env, ArgsInput::Words(words), hooks)
    }

    fn exec_input(
        &self,
        principal: &Principal,
        env: &Envelope,
        input: ArgsInput<'_>,
        hooks: &dyn ExecHooks,
    ) -> ResultEnvelope {
        let (pack_id, verb) = (env.pack_id.as_str(), env.verb_key.as_str());
        let deny = |code: Code, msg: String| ResultEnvelope::denied(pack_id, verb, code, msg);

        if pack_id == bootstrap::BOOTSTRAP_ID {
            return match input {
                ArgsInput::Json(_) => self.bootstrap(principal, env),
                ArgsInput::Words(words) => {
                    match crate::args::ArgSpec::none().parse_words(&format!("{pack_id}.{verb}"), words) {
                        Ok(args) => self.bootstrap(principal, &Envelope { args, ..env.clone() }),
                        Err(e) => deny(Code::InvalidArgs, e.0),
                    }
                }
            };
        }

        // 1. Resolve the pack, its activation, and the command's Policy row.
        let record = match self.store.state() {
            Ok(s) => s.packs.get(pack_id).cloned(),
            Err(e) => return deny(Code::UnknownPack, e.to_string()),
        };
        let Some(record) = record else {
            return deny(Code::UnknownPack, format!("unknown pack {pack_id}"));
        };
        let pack = match self.pack(pack_id, &record) {
            Ok(Some(p)) => p,
            Ok(None) => return deny(Code::UnknownPack, format!("unknown pack {pack_id}")),
            Err(e) => return deny(Code::UnknownPack, e.to_string()),
        };
        let resolved = match pack.command(verb) {
            Some(c) => Resolved::Command(c),
            None => match pack.pass_through.as_ref().and_then(|p| p.policy.get(verb)) {
                Some(row) => Resolved::PassThrough(*row),
                None => return deny(Code::NoPolicy, format!("no policy for {verb}")),
            },
        };
        let row = match &resolved {
            Resolved::Command(c) => c.policy,
            Resolved::PassThrough(r) => *r,
        };
        // Command-line words are parsed now, but a parse error is reported at the argument step, so the CLI
        // and the JSON face deny in the same order.
        let mut words_error = None;
        let parsed_words;
        let raw_args: &Map<String, Value> = match input {
            ArgsInput::Json(a) => a,
            ArgsInput::Words(words) => {
                let parsed = match &resolved {
                    Resolved::Command(c) => {
                        c.args.parse_words(&format!("{pack_id}.{verb}"), words).map_err(|e| e.0)
                    }
                    Resolved::PassThrough(_) => Ok(pass_through_words(words)),
                };
                parsed_words = parsed.unwrap_or_else(|e| {
                    words_error = Some(e);
                    Map::new()
                });
                &parsed_words
            }
        };
        let audited = Envelope {
            pack_id: env.pack_id.clone(),
            verb_key: env.verb_key.clone(),
            args: raw_args.clone(),
            project_id: env.project_id.clone(),
        };
        let env = &audited;
        let audit = |out: ResultEnvelope| self.audit(principal, env, row.operation, out);
        if !record.activated {
            return audit(deny(Code::NotActivated, format!("pack {pack_id} not activated")));
        }

        // 2. The Principal is authenticated by its face; land `brain` needs a project id.
        if row.land == Land::Brain && env.project_id.as_deref().is_none_or(str::is_empty) {
            return audit(deny(Code::ProjectRequired, "privacy.land brain requires project_id".into()));
        }

        // 3. The capability.
        let cap = if verb == "connect" {
            Capability::PackConnect
        } else if row.operation == Operation::Write {
            Capability::ExecWrite
        } else {
            Capability::ExecRead
        };
        if !principal.grants.allows(cap, pack_id, verb) {
            return audit(deny(
                Code::Denied,
                format!("denied: missing {} for {pack_id}.{verb}", cap.as_str()),
            ));
        }

        // Arguments are checked before anything runs.
        if let Some(e) = words_error {
            return audit(deny(Code::InvalidArgs, e));
        }
        let target = format!("{pack_id}.{verb}");
        let (checked, pass_argv) = match &resolved {
            Resolved::Command(c) => match c.args.check(&target, raw_args) {
                Ok(a) => (a, Vec::new()),
                Err(e) => return audit(deny(Code::InvalidArgs, e.0)),
            },
            Resolved::PassThrough(_) => match pass_through_args(&pack, &target, raw_args) {
                Ok(x) => x,
                Err(e) => return audit(deny(Code::InvalidArgs, e)),
            },
        };

        // 4. The confirm gate.
        if row.confirm && !checked.confirmed {
            let mut out = deny(Code::ConfirmRequired, "confirm required".into());
            if let Resolved::Command(c) = &resolved {
                out.preview = c.preview.as_ref().map(|p| p.render(&checked.values));
            }
            return audit(out);
        }

        // 5. Mint the Binding.
        let binding = match mint(&self.store, &pack, principal, checked.mock) {
            Ok(b) => b,
            Err(e) => return audit(deny(Code::BindingFailed, e)),
        };

        // 6. Run the adapter in the sandbox.
        let sandbox = match self.store.sandbox() {
            Ok(s) => s,
            Err(e) => return audit(deny(Code::SandboxDenied, format!("sandbox: {e}"))),
        };
        let command = match &resolved {
            Resolved::Command(c) => Some(*c),
            Resolved::PassThrough(_) => None,
        };
        let live_title =
            command.filter(|_| hooks.watching()).and_then(|c| c.title.render(&checked.values, None));
        let call = Call {
            store: &self.store,
            pack: &pack,
            verb_key: verb,
            command,
            write: row.operation == Operation::Write,
            args: &checked.values,
            pass_argv: &pass_argv,
            binding: &binding,
            sandbox: &sandbox,
            project_dir: self.project_dir.as_deref(),
            component_sha256: record.component_sha256.as_deref(),
            principal,
            live_title: live_title.as_deref(),
            hooks,
        };
        let adapter: Option<&dyn Adapter> = match pack.kind {
            AdapterKind::Wrap => Some(&WrapAdapter),
            AdapterKind::Composite => Some(&self.composite),
            AdapterKind::Openapi | AdapterKind::SenseOnly => None,
        };
        let ran = adapter.map(|a| a.run(&call)).unwrap_or_else(|| {
            AdapterResult::fail(
                Code::AdapterFailed,
                format!("pack {pack_id} is kind {}, which this runtime cannot execute; only wrap and composite packs run here", pack.kind.as_str()),
            )
        });
        hooks.exited(ran.exit_code);

        // 7. A structured result, audited when it was a write.
        let mut out = ResultEnvelope::empty(pack_id, verb, ran.ok);
        out.code = ran.code;
        out.error = ran.error;
        out.stdout = ran.stdout;
        out.stderr = ran.stderr;
        out.truncated = ran.truncated;
        out.sandbox = ran.sandbox;
        if ran.ok {
            out.title = command.and_then(|c| {
                c.title.render(&checked.values, Some(ran.result.as_ref().unwrap_or(&Value::Null)))
            });
        }
        out.result = ran.result;
        scrub::scrub(&mut out, &binding);
        audit(out)
    }

    /// The installed pack, loaded once per install (keyed by its install time) and shared across calls.
    fn pack(&self, id: &str, record: &PackState) -> Result<Option<Arc<Pack>>, crate::store::StoreError> {
        if let Some((at, p)) = self.packs.lock().ok().and_then(|m| m.get(id).cloned()) {
            if at == record.installed_at {
                return Ok(Some(p));
            }
        }
        let Some(pack) = self.store.load_pack(id)? else { return Ok(None) };
        let pack = Arc::new(pack);
        if let Ok(mut m) = self.packs.lock() {
            m.insert(id.to_string(), (record.installed_at.clone(), pack.clone()));
        }
        Ok(Some(pack))
    }

    fn audit(
        &self,
        principal: &Principal,
        env: &Envelope,
        op: Operation,
        out: ResultEnvelope,
    ) -> ResultEnvelope {
        if op != Operation::Write {
            return out;
        }
        let rec = AuditRecord {
            at: crate::clock::now_rfc3339(),
            principal: principal.id.clone(),
            tenant: principal.tenant.clone(),
            invoker: principal.invoker.as_str().to_string(),
            pack_id: env.pack_id.clone(),
            verb_key: env.verb_key.clone(),
            operation: op.as_str().to_string(),
            ok: out.ok,
            code: out.code.map(|c| c.as_str().to_string()),
            args_sha256: args_digest(&env.args),
        };
        match self.store.append_audit(&rec) {
            Ok(()) => out,
            // A write that cannot be audited is reported as failed: never an unrecorded write.
            Err(e) if out.ok => {
                let mut o = out;
                o.ok = false;
                o.code = Some(Code::AdapterFailed);
                o.error = Some(format!("the command ran but its audit line could not be written: {e}"));
                o
            }
            Err(_) => out,
        }
    }
}

/// A pass-through call takes `argv` (a list of strings, at most `maxArgv`) plus the gate and mock arguments.
fn pass_through_args(
    pack: &Pack,
    target: &str,
    args: &Map<String, Value>,
) -> Result<(crate::args::CheckedArgs, Vec<String>), String> {
    let max = pack.pass_through.as_ref().map(|p| p.max_argv as usize).unwrap_or(0);
    let mut rest = Map::new();
    let mut argv = Vec::new();
    for (k, v) in args {
        if k == "argv" {
            let list = v
                .as_array()
                .ok_or_else(|| format!("argument `argv` for {target} must be a list of strings"))?;
            for item in list {
                let s = item.as_str().ok_or_else(|| {
                    format!("argument `argv` for {target} must be a list of strings, not {item}")
                })?;
                if s.contains('\0') {
                    return Err(format!("argument `argv` for {target} holds a NUL byte"));
                }
                if !pack.pass_through.as_ref().is_some_and(|p| p.allows_word(s)) {
                    return Err(format!(
                        "argument `argv` for {target}: {s:?} is an option the pack does not list in pass_through.allowedOptions (an option such as `--output=FILE` could make a read write); pass only the listed options, or ask the pack's author to name the command"
                    ));
                }
                argv.push(s.to_string());
            }
        } else if GATE_ARGS.contains(&k.as_str()) || k == "mode" {
            rest.insert(k.clone(), v.clone());
        } else {
            return Err(format!("unknown argument `{k}` for {target}; a pass-through subcommand takes only argv (a list of strings)"));
        }
    }
    if argv.len() > max {
        return Err(format!(
            "{target} takes at most {max} further argument(s) (pass_through.maxArgv), not {}",
            argv.len()
        ));
    }
    let checked = crate::args::ArgSpec::none().check(target, &rest).map_err(|e| e.0)?;
    Ok((checked, argv))
}

/// The bare words of a pass-through call become its argv; `confirm=`, `apply=` and `mode=` stay arguments.
fn pass_through_words(words: &[String]) -> Map<String, Value> {
    let mut out = Map::new();
    let mut argv = Vec::new();
    for w in words {
        match w.split_once('=') {
            Some((k @ ("confirm" | "apply"), v)) if v == "true" || v == "false" => {
                out.insert(k.to_string(), Value::Bool(v == "true"));
            }
            Some(("mode", v)) => {
                out.insert("mode".into(), Value::String(v.to_string()));
            }
            _ => argv.push(Value::String(w.clone())),
        }
    }
    out.insert("argv".into(), Value::Array(argv));
    out
}

/// SHA-256 of the arguments' canonical JSON (keys sorted), hex.
pub fn args_digest(args: &Map<String, Value>) -> String {
    fn canon(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|k| (k.clone(), canon(&m[k]))).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(canon).collect()),
            other => other.clone(),
        }
    }
    let text = canon(&Value::Object(args.clone())).to_string();
    Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

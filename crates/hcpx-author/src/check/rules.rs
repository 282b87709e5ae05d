//! The rule registry: one row per rule, ids never change; `docs/rules.md` and `--json` come from this table.

use super::{evals, manifest, policy, probe, skill, structure};
use super::{Category, Ctx, Finding, Hits, Severity};

/// One rule: its stable id, what it checks, why, the generic fix, and the function that finds it.
pub struct Rule {
    pub id: &'static str,
    pub name: &'static str,
    pub severity: Severity,
    pub category: Category,
    pub what: &'static str,
    pub why: &'static str,
    pub fix: &'static str,
    pub run: fn(&Ctx, &mut Hits),
}

macro_rules! rules {
    ($($id:literal $name:literal $sev:ident $cat:ident $run:path, $what:literal, $why:literal, $fix:literal;)*) => {
        /// Every rule, in the order the docs list them.
        pub const RULES: &[Rule] = &[
            $(Rule { id: $id, name: $name, severity: Severity::$sev, category: Category::$cat, what: $what, why: $why, fix: $fix, run: $run },)*
        ];
    };
}

rules! {
    "S001" "no-eval-file" Warning Structure structure::no_eval_file,
        "The pack has no `hcp.eval.json`.",
        "Evals on realistic tasks are how a pack shows its commands work for an agent, and how a change is caught before it ships.",
        "Run `hcpx check DIR --init-evals` and replace every `TODO` with a real value.";
    "S002" "no-proof-script" Warning Structure structure::no_proof_script,
        "The pack ships no `proof.sh`.",
        "Every pack proves itself with a script CI runs against a conforming runtime (docs/packs.md#the-proof-script).",
        "Add `proof.sh`: lint, install, activate, one read, a gated write refused without confirm, then confirmed against a throw-away project or workspace (`--mode mock` only swaps the Binding's credential for a mock one: the write still runs; `hcpx exec --dry-run` runs nothing).";
    "S003" "proof-not-executable" Warning Structure structure::proof_not_executable,
        "`proof.sh` is not executable.",
        "CI runs `./proof.sh`; a script without its execute bit fails there and nowhere else.",
        "`chmod +x proof.sh`.";
    "S004" "secret-file" Error Structure structure::secret_file,
        "A file in the pack looks like a secret or a private key (`.env`, `*.pem`, `id_rsa`, `.netrc`, …).",
        "Install copies the pack, and packs are shared; a secret in one is leaked to everyone who installs it.",
        "Delete the file and revoke what it held; credentials reach commands only through the Binding.";
    "S005" "pack-too-large" Warning Structure structure::pack_too_large,
        "The pack's files add up to more than 16 MiB.",
        "A pack is reviewed and copied on every install; bulk data hides what the pack really does.",
        "Remove what the commands do not need (data sets, build output).";
    "S006" "build-debris" Warning Structure structure::build_debris,
        "The pack holds `.git`, `node_modules`, `target`, `__pycache__` or similar.",
        "Leftovers are copied on install, bloat the pack and can carry history or secrets.",
        "Remove them from the pack directory.";
    "S007" "describe-mismatch" Error Structure structure::describe_mismatch,
        "A composite's component does not list every command of the manifest in `describe()`, or cannot answer it.",
        "The runtime asks `describe()` before a component's first call and refuses the pack when a command is missing: every call of every command fails the same way.",
        "Implement the missing commands in the guest and return their names from `describe()`, then rebuild the component; or remove them from the three files.";
    "M001" "no-description" Error Manifest manifest::no_description,
        "A command has no description.",
        "Agents pick a tool by its description; without one the command is invisible or picked at random.",
        "Add one sentence: what the command returns or changes, and when to use it.";
    "M002" "short-description" Warning Manifest manifest::short_description,
        "A description is under 20 characters.",
        "A few words (`List.`) do not tell an agent what comes back or when to pick the command.",
        "Write one full sentence: what it returns, and when an agent should pick it.";
    "M003" "long-description" Warning Manifest manifest::long_description,
        "A description is over 300 characters.",
        "Every description is in every agent's tool list; long ones crowd out the signal.",
        "Cut it to one sentence and move detail to `HARNESS.md`.";
    "M004" "duplicate-description" Warning Manifest manifest::duplicate_description,
        "Two commands share a description.",
        "An agent cannot choose between two tools that describe themselves the same way.",
        "Say in each description how the command differs from the other.";
    "M005" "arg-no-description" Warning Manifest manifest::arg_no_description,
        "An argument has no description.",
        "Agents fill arguments from their descriptions: the form of an id, a path, a date.",
        "Add a description saying what value the argument takes and in what form.";
    "M006" "arg-no-type" Warning Manifest manifest::arg_no_type,
        "An argument has no JSON Schema `type`.",
        "Without a type any JSON value passes validation and reaches the CLI.",
        "Add `\"type\"`: `string`, `integer`, `number` or `boolean`.";
    "M007" "required-arg-no-example" Warning Manifest manifest::required_no_example,
        "A required argument has no `examples`.",
        "`hcpx commands` prints ready-to-run lines from examples, `--init-evals` fills cases from them, and probes need them to reach the command.",
        "Add `\"examples\": [<a real value>]`.";
    "M008" "vague-arg-name" Warning Manifest manifest::vague_arg_name,
        "An argument is named with one letter or a generic word (`value`, `data`, `input`, `arg`).",
        "Unambiguous parameter names are the cheapest way to get arguments filled right.",
        "Rename it after what it holds (`file`, `query`, `repo`), in args, `cli[]` and titles.";
    "M009" "mega-command" Error Manifest manifest::mega_command,
        "A command is named like a mega-command (`run`, `exec`, `shell`, `raw`, …).",
        "A command that forwards arbitrary arguments behaves as a shell, which Execute does not cover (docs/packs.md#agent-safe-commands).",
        "Replace it with named commands, one per task.";
    "M010" "secret-arg" Error Manifest manifest::secret_arg,
        "An argument is named like a credential (`token`, `password`, `api_key`, `secret`).",
        "Arguments land in transcripts, titles, audit digests and logs; a secret passed as one leaks.",
        "Remove the argument; declare a `binding` and pass the secret through `wrap.agent_env` as `{{binding.FIELD}}`.";
    "M011" "unused-arg" Warning Manifest manifest::unused_arg,
        "A wrap command declares an argument that no `cli[]` token uses.",
        "The agent fills it, the CLI never sees it, and the call silently does something else.",
        "Use `{{name}}` in the command's `cli[]`, or remove the argument.";
    "M012" "no-name" Info Manifest manifest::no_name,
        "The manifest has no `name`.",
        "Hosts show the name to people; without it they show the id.",
        "Add `\"name\"`: the product's name as people say it.";
    "M013" "no-cli-bin" Warning Manifest manifest::no_cli_bin,
        "A wrap pack declares no `cliBin`.",
        "The twin face (the same command typed in a terminal) is shown to people only when the pack names its CLI.",
        "Add `\"cliBin\"`: the command people type.";
    "M014" "optional-before-required" Warning Manifest manifest::optional_before_required,
        "An optional argument takes an earlier `x-position` than a required one.",
        "Bare words fill positions in order, so one word lands in the optional slot and the required one is missing.",
        "Give required arguments the lowest positions, or drop `x-position` from the optional one.";
    "M015" "positional-not-scalar" Warning Manifest manifest::positional_not_scalar,
        "An argument with `x-position` is a boolean, object or array.",
        "A bare word cannot spell those unambiguously (`true` the word or the flag?).",
        "Remove `x-position`; pass it as `name=…` or `name:=json`.";
    "M016" "mixed-arg-style" Warning Manifest manifest::mixed_arg_style,
        "Argument names mix `snake_case`, `camelCase` and `kebab-case`.",
        "Agents carry names across commands; one style keeps them guessable.",
        "Rename the arguments to one style across the pack.";
    "M018" "scaffold-template" Error Manifest manifest::scaffold_template,
        "Commands still carry the `hcpx wrap` scaffold template (a description starting `TODO`).",
        "A template command describes nothing real; an agent would call a guess.",
        "Replace the template commands with 5 to 12 real commands from the CLI's `--help`.";
    "M019" "no-title" Info Manifest manifest::no_title,
        "A command declares no title.",
        "Hosts show a declared title in place of the raw command line (docs/packs.md#titles-and-previews).",
        "Add `\"title\": {\"live\": [...], \"done\": [...]}` ending each list with a plain title.";
    "M021" "mock-binding" Info Manifest manifest::mock_binding,
        "The Binding is `mock`.",
        "A mock Binding never gives commands a real credential; right for a demo, wrong once shipped.",
        "Set `binding.mode` to what the CLI needs (`public`, `local`, `user`).";
    "M023" "path-cli-in-pack-dir" Warning Manifest manifest::path_cli_in_pack_dir,
        "A CLI on `PATH` runs with `workspace.mode: none`, in the installed pack's directory.",
        "A CLI on PATH almost always works on the caller's project; in the pack directory it sees the wrong files (docs/format.md#surface-wrap-workspace).",
        "Set `wrap.workspace.mode` to `project` (or `workspace`/`ephemeral` for a CLI that needs no project).";
    "M024" "shell-bin" Error Manifest manifest::shell_bin,
        "`wrap.bin` is a shell or an interpreter on PATH (`sh`, `bash`, `python`, `node`, `env`, …).",
        "Allow-listing an interpreter lets a pack run any program; the allow-list then protects nothing.",
        "Ship the script inside the pack (`\"bin\": \"./bin/tool\"`) or wrap the real CLI.";
    "M026" "bad-title" Warning Manifest manifest::bad_title,
        "A title names an unknown argument, uses `{{result…}}` in `live`, or has no plain fallback.",
        "A title must always show and never show an empty slot (docs/packs.md#titles-and-previews).",
        "Use declared arguments, keep `result` fields in `done`, and end each list with a title without placeholders.";
    "M027" "spliced-into-interpreter" Error Manifest manifest::spliced_into_interpreter,
        "A placeholder sits inside a larger token handed to a query or script interpreter (sqlite3, psql, mysql, jq, awk, sed, `python -c`, `sh -c`, `node -e`…), and its argument's values are not closed (an `enum`, a number, or an anchored `pattern` of word characters).",
        "The value becomes code: `'{{body}}'` in an INSERT lets a caller with a read grant drop the table, and the Policy row says nothing of it.",
        "Pass the value as data, not code (jq: `--arg name {{x}}`, then `$name`; any CLI: a token of its own that it reads as a value), or close the argument with `enum` or an anchored `pattern` of word characters such as `^[A-Za-z_][A-Za-z0-9_]*$`.";
    "M028" "path-arg-unmarked" Warning Manifest manifest::path_arg_unmarked,
        "An argument named like a file (`file`, `path`, `database`, `dir`, `folder`…) of a wrap command says neither `\"x-path\": true` nor `false`.",
        "With `x-path: true` the runtime resolves the value beneath the working directory and refuses an absolute path, `..` or a link out, even where the kernel gives no sandbox; without it a read can be pointed at any file the user can read.",
        "Add `\"x-path\": true` to the argument's schema, or `\"x-path\": false` when the name only looks like a file (a JSON path).";
    "P001" "destructive-read" Error Policy policy::destructive_read,
        "A command named like a write (`delete`, `send`, `transfer`, …) is a read in `policy.json`.",
        "Reads need no write grant and no confirm gate; a mislabelled write slips past both.",
        "Set `\"operation\": \"write\", \"confirm\": true`, or rename the command if it only reads.";
    "P002" "ungated-destructive-write" Error Policy policy::ungated_destructive,
        "A destructive write (`delete`, `send`, `pay`, …) has no `confirm: true`.",
        "What cannot be undone should wait for a person (docs/packs.md#agent-safe-commands).",
        "Add `\"confirm\": true` to its Policy row.";
    "P003" "write-named-like-read" Warning Policy policy::write_named_like_read,
        "A write is named like a read (`list`, `show`, `status`, …).",
        "Explicit writes need clear names; an agent calls a `show` to look (docs/packs.md#agent-safe-commands).",
        "Rename it after what it changes, or make it a read if it only looks.";
    "P004" "gated-without-preview" Warning Policy policy::gated_without_preview,
        "A confirm-gated write declares no `preview`.",
        "The person confirming should see what will happen, not raw arguments.",
        "Add a `preview` with a kind, a title and the fields that matter.";
    "P005" "gate-not-mirrored" Warning Policy policy::gate_not_mirrored,
        "A confirm-gated command of a CLI the pack ships (`wrap.bin` a path) has no `--confirm`/`--apply`/`--yes` in `cli[]`.",
        "The gate should be visible on both faces: the CLI typed by hand should ask too (docs/packs.md#agent-safe-commands).",
        "Add the CLI's own confirmation flag to `cli[]`.";
    "P006" "policy-hint-mismatch" Error Policy policy::hint_mismatch,
        "A command's `policy` hint in `surface.json` disagrees with its `policy.json` row.",
        "Two files that disagree on read or write mislead every reader; `policy.json` decides.",
        "Make the hint match `policy.json`, or remove it.";
    "P007" "public-with-credentials" Warning Policy policy::public_with_credentials,
        "A command says `privacy.land: public` while the Binding carries a credential.",
        "`public` means no private data is involved; a call made with a user's credential involves theirs.",
        "Set `privacy.land` to `local` (the default).";
    "P008" "pass-through-bootstrap" Warning Policy policy::pass_through_bootstrap,
        "The pack is a `pass_through` bootstrap.",
        "Pass-through is a bootstrap to promote to named commands: agents get no descriptions, schemas or titles.",
        "Promote each allowed subcommand to a named command, then drop `pass_through`.";
    "P009" "only-writes" Info Policy policy::only_writes,
        "Every command is a write.",
        "An agent should be able to look at the state before it changes it.",
        "Add a read that shows what the writes change (`status`, `list`).";
    "P010" "mutating-subcommand-read" Warning Policy policy::mutating_read,
        "A read's `cli[]` runs a subcommand that changes what it acts on (`init`, `restore`, `add`, `apply`, `commit`, …).",
        "A read runs without a write grant or a confirm gate, and `hcpx check --probe` runs every read in the real directory; probes skip such a command.",
        "Make it a write in `policy.json` (with `confirm: true` if it cannot be undone), or point `cli[]` at a subcommand that only reads.";
    "H001" "short-lead" Warning Skill skill::short_lead,
        "The Skill's lead (before the first `##`) is under 80 characters.",
        "Hosts load the lead first and often only the lead.",
        "Say what the pack does, its main command and what needs confirm, before the first `##`.";
    "H002" "long-lead" Warning Skill skill::long_lead,
        "The Skill's lead is over 2,000 characters.",
        "The lead is loaded into every context; detail belongs under headings loaded on demand.",
        "Cut the lead; move detail under a `##` heading.";
    "H003" "command-not-in-hot-path" Warning Skill skill::command_not_in_hot_path,
        "A command is missing from the hot-path table.",
        "The hot-path table is how an agent learns which command to use when (docs/packs.md#harnessmd).",
        "Add a row: | `command` | when to use it |.";
    "H004" "no-hot-path" Warning Skill skill::no_hot_path,
        "`HARNESS.md` has no hot-path table.",
        "Without it an agent does not know where to start.",
        "Add `## Hot path` with a table whose first column lists every command as inline code.";
    "H005" "gate-not-explained" Warning Skill skill::gate_not_explained,
        "A command is confirm-gated and the Skill never mentions `confirm`.",
        "An agent that does not know about the gate retries a refused write blindly.",
        "Say which commands need `confirm=true` and that a person approves them.";
    "H006" "secret-in-skill" Error Skill skill::secret_in_skill,
        "`HARNESS.md` holds something that looks like a token or a private key.",
        "The Skill is shown to every agent and host that loads the pack.",
        "Remove it, revoke it, and bind credentials through the Binding.";
    "H007" "todo-in-skill" Warning Skill skill::todo_in_skill,
        "`HARNESS.md` still has `TODO`, `FIXME` or `TBD`.",
        "A placeholder teaches the agent nothing and tells it the pack is unfinished.",
        "Replace each placeholder with what an agent needs to know.";
    "H008" "long-skill" Warning Skill skill::long_skill,
        "`HARNESS.md` is over ~8,000 tokens.",
        "Loading the Skill should cost less than what it teaches.",
        "Keep the lead, the hot path and the arguments people get wrong; cut the rest.";
    "H009" "duplicate-hot-path-row" Warning Skill skill::duplicate_hot_path_row,
        "A command has more than one row in the hot-path table.",
        "Two rows for one command disagree sooner or later.",
        "Merge the rows.";
    "R001" "probe-failed" Error Probe probe::probe_failed,
        "A read fails when called the way an agent calls it (examples or the first eval case as arguments).",
        "If the documented call fails, every agent call will.",
        "Fix `cli[]` so the read succeeds, or correct the examples that feed it.";
    "R002" "not-json" Warning Probe probe::not_json,
        "Reads succeed but print text, not JSON (one finding lists them all).",
        "Agents parse; `--json` or JSON by default is the first agent-safe rule (docs/packs.md#agent-safe-commands).",
        "Select the CLI's JSON output in `cli[]` or `wrap.json_flag`.";
    "R003" "over-token-budget" Error Probe probe::over_budget,
        "A read's output is over ~25,000 tokens.",
        "Tool results past the budget are cut or refused by agent hosts.",
        "Limit the output by default (`--limit`, `--fields`).";
    "R004" "large-output" Warning Probe probe::large_output,
        "A read's output is over ~5,000 tokens.",
        "High-signal output: most of a large result is noise an agent pays for.",
        "Return fewer fields or rows by default.";
    "R005" "ansi-escapes" Warning Probe probe::ansi_escapes,
        "Output has terminal colour codes although there is no terminal and `NO_COLOR` is set.",
        "Escape codes corrupt JSON and waste tokens (Command Line Interface Guidelines, NO_COLOR).",
        "Pass the CLI's `--color=never`/`--no-color`.";
    "R006" "probe-timeout" Error Probe probe::timed_out,
        "A read runs past the timeout.",
        "A prompt without a TTY or a hang stalls the agent until it gives up (no interactive prompts on the agent path).",
        "Pass the CLI's non-interactive flag; make the read finish without a terminal.";
    "R007" "slow-probe" Warning Probe probe::slow,
        "A read takes more than 2,000 ms.",
        "Agents call reads in loops; a slow read multiplies.",
        "Narrow what the read does by default.";
    "R008" "empty-output" Warning Probe probe::empty_output,
        "A read succeeds and prints nothing.",
        "An agent cannot tell \"nothing found\" from \"did not run\".",
        "Print the result, `[]` when empty.";
    "R009" "silent-failure" Error Probe probe::silent_failure,
        "A read fails with a non-zero exit and no message.",
        "Actionable errors: an agent can only fix what it is told.",
        "Make the CLI say what went wrong on stderr, or fix the call.";
    "R010" "stderr-on-success" Info Probe probe::stderr_on_success,
        "A read succeeds and writes to stderr.",
        "stdout is for data and stderr for messages; messages on success are usually noise in a transcript.",
        "Pass the CLI's quiet flag if the message is noise; a composite logs only what a person must see through `host.log`.";
    "R011" "read-changed-files" Error Probe probe::read_changed_files,
        "A read created, changed or removed files in its working directory.",
        "Reads must be idempotent so retries are safe; a read that writes needs a write grant.",
        "Make it a write, or pass the CLI's read-only flag.";
    "R012" "error-with-exit-zero" Warning Probe probe::error_with_exit_zero,
        "A read prints a JSON `error` but exits 0.",
        "Non-zero exit on failure lets orchestrators branch correctly.",
        "Make the CLI exit non-zero on failure.";
    "R013" "probe-skipped" Info Probe probe::probe_skipped,
        "A read could not be probed: a required argument has no example and no eval case.",
        "An unprobed command is an untested command.",
        "Add `examples`, or an eval case that expects `ok: true`.";
    "R014" "unknown-subcommand" Error Probe probe::unknown_subcommand,
        "A `cli[]` points at a subcommand the CLI does not have.",
        "The command can never work; the CLI changed or the manifest guessed.",
        "Point `cli[]` at a subcommand that exists (see `BIN --help`), or remove the command from the three files.";
    "R015" "bin-missing" Error Probe probe::bin_missing,
        "The CLI could not be run: not installed, not on PATH, or not executable.",
        "Nothing else can be probed until the CLI runs.",
        "Install the CLI or fix `wrap.bin`.";
    "R016" "sandbox-hid-data" Error Probe probe::sandbox_hid_data,
        "A read returns nothing, or fails with \"Permission denied\", under the sandbox, and returns data once a system path outside the default view (`/sys`, `/dev`, `/run`, `/var` …) is lent to it.",
        "Landlock keeps a wrap's command to the system programs, its pack, its working directory and TMPDIR; a CLI that cannot see `/sys` often says nothing and prints an empty list, which an agent (and an eval) takes for the truth.",
        "Declare the path in `wrap.read`, the pack's way to ask, and say in HARNESS.md why; the operator lends it with `hcpx allow-read PACK PATH` (sandbox.json `packs.<id>.read`).";
    "E001" "read-without-case" Warning Eval evals::read_without_case,
        "A read has no eval case.",
        "Evaluation against realistic tasks is what catches a broken command.",
        "Add a case expecting `ok`, `json`, `max_ms` and `max_tokens`.";
    "E002" "gated-write-without-refusal" Warning Eval evals::gated_write_without_refusal,
        "A confirm-gated write has no case showing it is refused without confirm.",
        "The gate is the pack's safety promise; a case keeps it from regressing.",
        "Add a case expecting `{\"ok\": false, \"error\": \"confirm required\"}`.";
    "E003" "case-expects-nothing" Error Eval evals::expects_nothing,
        "An eval case has an empty `expect`.",
        "A case that cannot fail proves nothing.",
        "State `ok`, `json`, `contains` or `error`, plus budgets.";
    "E004" "duplicate-case-name" Warning Eval evals::duplicate_case_name,
        "Two eval cases share a name.",
        "Results are reported by name; duplicates cannot be told apart.",
        "Name each case after what it shows.";
    "E005" "failing-case" Error Eval evals::failing_case,
        "An eval case fails (or still has a `TODO` argument, or times out).",
        "A failing case is a broken command or a wrong expectation.",
        "Fix the command, or the case if its expectation is wrong; never weaken an expectation to make it pass.";
    "E006" "case-without-budget" Warning Eval evals::no_budget,
        "A case expecting success sets neither `max_ms` nor `max_tokens`.",
        "Budgets catch a command that got slow or verbose.",
        "Add `max_ms` and `max_tokens`.";
}

/// The registry row of `id`.
pub fn rule(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.id == id)
}

/// Where a rule's reason is written down.
pub fn docs_link(id: &str) -> String {
    format!("docs/rules.md#{}", id.to_ascii_lowercase())
}

/// Runs every rule on `ctx`.
pub fn run_all(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for r in RULES {
        let mut hits = Hits::default();
        (r.run)(ctx, &mut hits);
        out.extend(hits.0.into_iter().map(|h| Finding {
            id: r.id.to_string(),
            severity: r.severity,
            category: r.category,
            file: h.file,
            pointer: h.pointer,
            message: h.message,
            fix: h.fix,
            docs: docs_link(r.id),
        }));
    }
    out
}

/// `docs/rules.md`, generated from the registry.
pub fn docs_markdown() -> String {
    let mut s = String::from(
        "# hcpx check rules\n\n<!-- generated from crates/hcpx-author/src/check/rules.rs; run `HCPX_BLESS=1 cargo test docs` to refresh -->\n\n\
`hcpx check DIR` reviews a pack in layers: structure, manifest, Policy, Skill, probe (`--probe`) and eval. \
Each rule has a stable id, a severity and a category. The score starts at 100; each error costs 12 and each \
warning 4; notes (info) cost nothing. Any error caps the grade at D (the text report names the grade the score alone has), and a pack is ready to share at 90 or more \
with no errors. Lint kinds appear as `L-<kind>` errors (see [lint.md](lint.md)) and stop the other layers.\n\n\
| id | name | severity | category |\n|----|------|----------|----------|\n",
    );
    for r in RULES {
        s.push_str(&format!(
            "| [{}](#{}) | {} | {} | {} |\n",
            r.id,
            r.id.to_ascii_lowercase(),
            r.name,
            r.severity.as_str(),
            r.category.as_str()
        ));
    }
    for r in RULES {
        s.push_str(&format!(
            "\n<a id=\"{}\"></a>\n## {} {}\n\n{} · {}\n\n**What.** {}\n\n**Why.** {}\n\n**Fix.** {}\n",
            r.id.to_ascii_lowercase(),
            r.id,
            r.name,
            r.severity.as_str(),
            r.category.as_str(),
            r.what,
            r.why,
            r.fix
        ));
    }
    s
}

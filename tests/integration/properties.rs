//! Property tests (proptest): the rules the example tests pin on a few inputs, held over generated ones. The
//! `k=v` word parser, argv rendering, templates, the secret scrub and the audit digest. Each property runs at
//! most 256 cases from a fresh random seed (PROPTEST_RNG_SEED=N replays one run); a failure prints the
//! shrunk input, which then becomes an example test beside the code it broke.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{json, Map, Number, Value};

use hcpx_model::digest::args_digest;
use hcpx_model::naming::is_arg_name;
use hcpx_model::{MintedBinding, ResultEnvelope};
use hcpx_pack::args::ArgSpec;
use hcpx_pack::pack::{BindingMode, PassThrough};
use hcpx_pack::render::{render_argv, RenderError};
use hcpx_pack::template::{Piece, Template};
use hcpx_pack::Pack;
use hcpx_runtime::scrub::{encodings, scrub};

/// `cases` per property (PROPTEST_CASES=N runs more, for a deeper hunt), no regression files written into the
/// tree: a shrunk failure is kept as an example test instead.
fn config(cases: u32) -> ProptestConfig {
    let base = ProptestConfig::default();
    let cases = if std::env::var_os("PROPTEST_CASES").is_some() { base.cases } else { cases };
    ProptestConfig { cases, failure_persistence: None, ..base }
}

/// Any text: every char, NUL, `=`, `-`, braces and multi-byte ones included, with the characters the parsers
/// care about made frequent.
fn text(max: usize) -> impl Strategy<Value = String> {
    let ch = prop_oneof![
        3 => any::<char>(),
        2 => prop::sample::select(vec!['=', ':', '-', '{', '}', '\0', ' ', '%', '/', '+', 'a', '1', 'é']),
    ];
    prop::collection::vec(ch, 0..max).prop_map(String::from_iter)
}

// ---------------------------------------------------------------------------------------------------------
// The `k=v` word parser (ArgSpec::parse_words).

/// The type lists the word parser converts a `k=v` value to (args/call.rs `convert`): the four scalars, and
/// unions with null or with each other.
const TYPE_LISTS: [&[&str]; 8] = [
    &["string"],
    &["integer"],
    &["number"],
    &["boolean"],
    &["string", "null"],
    &["number", "null"],
    &["integer", "boolean"],
    &["boolean", "null"],
];

#[derive(Debug, Clone)]
struct DeclaredArg {
    types: &'static [&'static str],
    positional: bool,
    required: bool,
}

/// A command's declared arguments: names valid under the naming rules (never the reserved `mode` or the gate
/// names, which have rules of their own), each with a type list, maybe positional, maybe required.
fn declared_args() -> impl Strategy<Value = BTreeMap<String, DeclaredArg>> {
    let name = "[a-z_][a-z0-9_-]{0,6}"
        .prop_filter("reserved", |n| !matches!(n.as_str(), "mode" | "confirm" | "apply"));
    let arg = (prop::sample::select(TYPE_LISTS.to_vec()), any::<bool>(), any::<bool>())
        .prop_map(|(types, positional, required)| DeclaredArg { types, positional, required });
    prop::collection::btree_map(name, arg, 1..6)
}

fn schema_of(args: &BTreeMap<String, DeclaredArg>) -> Value {
    let mut props = Map::new();
    let mut position = 0;
    for (name, a) in args {
        let mut p = Map::new();
        let t = if a.types.len() == 1 { json!(a.types[0]) } else { json!(a.types) };
        p.insert("type".into(), t);
        if a.positional {
            p.insert("x-position".into(), json!(position));
            position += 1;
        }
        props.insert(name.clone(), Value::Object(p));
    }
    let required: Vec<&String> = args.iter().filter(|(_, a)| a.required).map(|(n, _)| n).collect();
    json!({ "type": "object", "properties": props, "required": required })
}

fn compile(args: &BTreeMap<String, DeclaredArg>) -> ArgSpec {
    ArgSpec::compile(Some(&schema_of(args))).expect("generated schema compiles")
}

/// A valid value for a type list, as the word parser documents it: strings, integers within i64, finite
/// numbers, booleans, null.
fn value_of(types: &'static [&'static str]) -> BoxedStrategy<Value> {
    if types.contains(&"string") {
        return text(12).prop_map(Value::String).boxed();
    }
    let mut choices: Vec<BoxedStrategy<Value>> = Vec::new();
    for t in types {
        choices.push(match *t {
            "integer" => any::<i64>().prop_map(Value::from).boxed(),
            "number" => prop_oneof![
                any::<i64>().prop_map(Value::from),
                any::<f64>().prop_filter_map("finite", |f| Number::from_f64(f).map(Value::Number)),
            ]
            .boxed(),
            "boolean" => any::<bool>().prop_map(Value::Bool).boxed(),
            _ => Just(Value::Null).boxed(),
        });
    }
    prop::strategy::Union::new(choices).boxed()
}

/// Declared arguments and valid values: every required one, and each optional one or not.
fn declared_with_values() -> impl Strategy<Value = (BTreeMap<String, DeclaredArg>, Map<String, Value>)> {
    declared_args().prop_flat_map(|decl| {
        let values: Vec<_> = decl
            .iter()
            .map(|(name, a)| {
                let v = value_of(a.types);
                let v = if a.required { v.prop_map(Some).boxed() } else { prop::option::of(v).boxed() };
                (Just(name.clone()), v)
            })
            .collect();
        (Just(decl), values).prop_map(|(decl, values)| {
            let args = values.into_iter().filter_map(|(n, v)| v.map(|v| (n, v))).collect();
            (decl, args)
        })
    })
}

/// The text a value is written as after `k=`.
fn word_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A word the parser reads as `name=…` or `name:=…` (args/call.rs `split_key`), so it cannot stand bare.
fn splits_as_key(word: &str) -> bool {
    [":=", "="].iter().any(|sep| word.find(sep).is_some_and(|i| is_arg_name(&word[..i])))
}

/// Args written as words: the leading positional arguments that can stand bare as bare words (in position
/// order, stopping at the first that is absent or cannot), everything else as `k=v`.
fn to_words(decl: &BTreeMap<String, DeclaredArg>, args: &Map<String, Value>) -> Vec<String> {
    let mut words = Vec::new();
    let mut named = Vec::new();
    let mut bare_run = true;
    for (name, a) in decl {
        let Some(v) = args.get(name) else {
            bare_run &= !a.positional;
            continue;
        };
        let t = word_text(v);
        if a.positional && bare_run && !splits_as_key(&t) {
            words.push(t);
        } else {
            bare_run &= !a.positional;
            named.push(format!("{name}={t}"));
        }
    }
    words.extend(named);
    words
}

/// Words of every shape: arbitrary text, `name=text` and `name:=text` for declared and unknown names, gate
/// and mode words.
fn any_words(names: Vec<String>) -> impl Strategy<Value = Vec<String>> {
    let name = prop_oneof![
        4 => prop::sample::select(names),
        1 => prop::sample::select(vec!["confirm".to_string(), "apply".into(), "mode".into()]),
        1 => "[a-zA-Z_:=-]{0,5}",
    ];
    let word = prop_oneof![
        text(16),
        (name.clone(), text(12)).prop_map(|(n, v)| format!("{n}={v}")),
        (name, text(12)).prop_map(|(n, v)| format!("{n}:={v}")),
    ];
    prop::collection::vec(word, 0..8)
}

proptest! {
    #![proptest_config(config(256))]

    /// Whatever the words, parse_words answers (and check after it) without panicking.
    #[test]
    fn words_never_panic(
        (decl, words) in declared_args().prop_flat_map(|d| {
            let names = d.keys().cloned().collect();
            (Just(d), any_words(names))
        })
    ) {
        let spec = compile(&decl);
        if let Ok(args) = spec.parse_words("p.v", &words) {
            prop_assert!(args.len() <= words.len());
            let _ = spec.check("p.v", &args);
        }
    }

    /// A `k=v` word for a declared argument that the parser converts is a value `check` accepts: the parser
    /// never hands on a value of the wrong type.
    #[test]
    fn a_value_that_parses_passes_check(
        (decl, raw) in declared_args().prop_flat_map(|d| {
            let raws = prop::collection::vec(
                prop_oneof![text(10), "-?[0-9]{1,20}(\\.[0-9]{0,3})?(e-?[0-9]{1,3})?", "true|false|null|inf|NaN"],
                d.len(),
            );
            (Just(d), raws)
        })
    ) {
        let spec = compile(&decl);
        let words: Vec<String> = decl.keys().zip(&raw).map(|(n, r)| format!("{n}={r}")).collect();
        if let Ok(args) = spec.parse_words("p.v", &words) {
            let checked = spec.check("p.v", &args);
            prop_assert!(checked.is_ok(), "{words:?} parsed to {args:?}, which check refuses: {checked:?}");
            prop_assert_eq!(checked.map(|c| c.values).unwrap_or_default(), args);
        }
    }

    /// Valid args written as words (bare where a position allows, `k=v` otherwise) parse back to the same
    /// args, and check keeps them as they are.
    #[test]
    fn valid_args_round_trip_through_words((decl, args) in declared_with_values()) {
        let spec = compile(&decl);
        let words = to_words(&decl, &args);
        let parsed = spec.parse_words("p.v", &words);
        prop_assert_eq!(parsed.as_ref(), Ok(&args), "words {:?}", words);
        let checked = spec.check("p.v", &args).map(|c| c.values);
        prop_assert_eq!(checked, Ok(args));
    }

    /// `k:=json` carries any JSON value of a declared argument unchanged.
    #[test]
    fn json_words_round_trip((decl, args) in declared_with_values()) {
        let spec = compile(&decl);
        let words: Vec<String> = args.iter().map(|(k, v)| format!("{k}:={v}")).collect();
        prop_assert_eq!(spec.parse_words("p.v", &words), Ok(args));
    }
}

// ---------------------------------------------------------------------------------------------------------
// Argv rendering (render_argv).

/// Literal option tokens of the `mix` command below, and the JSON flag.
const MIX_FLAGS: [&str; 3] = ["--flag", "-n", "--json"];

/// A wrap pack with one command that has every kind of cli[] token (a lone value, a flag and its value, a
/// value joined to its flag, a value after literal text, two values in one token, a value before literal
/// text, a number after a flag and a lone number), and one that renders through wrap.argv_template.
fn render_pack() -> &'static Pack {
    static PACK: OnceLock<Pack> = OnceLock::new();
    PACK.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let string = json!({ "type": "string", "description": "s" });
        let number = json!({ "type": "number", "description": "n" });
        let mut props = Map::new();
        for n in ["a", "b", "c", "d", "e", "f", "g"] {
            props.insert(n.into(), string.clone());
        }
        props.insert("n".into(), number.clone());
        props.insert("m".into(), number);
        let surface = json!({
            "id": "prop", "kind": "wrap", "cliBin": "tool", "binding": { "mode": "public" },
            "wrap": { "bin": "./bin/tool", "argv_template": ["{{verb}}", "{{a}}"] },
            "verbs": {
                "mix": {
                    "description": "d.",
                    "cli": ["tool", "mix", "{{a}}", "--flag", "{{b}}", "--opt={{c}}", "x{{d}}", "{{e}}{{f}}",
                            "{{g}}-tail", "-n", "{{n}}", "{{m}}"],
                    "args": { "type": "object", "properties": props }
                },
                "run.fallback": {
                    "description": "d.",
                    "args": { "type": "object", "properties": { "a": string } }
                }
            }
        });
        let policy = json!({ "surface_id": "prop", "verbs": {
            "mix": { "operation": "read" }, "run.fallback": { "operation": "read" } } });
        let p = dir.path();
        std::fs::write(p.join("surface.json"), surface.to_string()).expect("write");
        std::fs::write(p.join("policy.json"), policy.to_string()).expect("write");
        std::fs::write(p.join("HARNESS.md"), "# Prop\n\nA pack for property tests.\n").expect("write");
        std::fs::create_dir_all(p.join("bin")).expect("mkdir");
        std::fs::write(p.join("bin/tool"), "#!/bin/sh\n").expect("write");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p.join("bin/tool"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        Pack::load(p).unwrap_or_else(|e| panic!("property pack: {e}"))
    })
}

/// A number argument's value as a call may give it: a JSON number, or text (render_argv also meets
/// unchecked args).
fn number_arg() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |f| Number::from_f64(f).map(Value::Number)),
        text(8).prop_map(Value::String),
        "-?(inf|NaN|[0-9]{1,3}(e[0-9]{1,3})?)".prop_map(Value::String),
    ]
}

/// The rendered text of an argument, `None` when it counts as missing (render.rs `arg_text`).
fn present(args: &Map<String, Value>, name: &str) -> Option<String> {
    hcpx_pack::render::arg_text(args.get(name)?)
}

fn finite_number(s: &str) -> bool {
    s.parse::<f64>().is_ok_and(f64::is_finite)
}

proptest! {
    #![proptest_config(config(256))]

    /// For arbitrary values: a NUL byte never reaches argv; a token that starts with '-' is one the command
    /// wrote (a literal flag, `--opt=` with its joined value, the JSON flag) or a finite number right after
    /// the flag `-n`; and rendering refuses exactly the calls that would break that, nothing else.
    #[test]
    fn no_value_becomes_an_option_and_no_nul_reaches_argv(
        strings in prop::collection::vec(prop::option::of(text(8)), 7),
        n in prop::option::of(number_arg()),
        m in prop::option::of(number_arg()),
    ) {
        let pack = render_pack();
        let (wrap, cmd) = (pack.wrap.as_ref().expect("wrap"), pack.command("mix").expect("mix"));
        let mut args = Map::new();
        for (name, v) in ["a", "b", "c", "d", "e", "f", "g"].iter().zip(strings) {
            if let Some(v) = v {
                args.insert(name.to_string(), Value::String(v));
            }
        }
        for (name, v) in [("n", n), ("m", m)] {
            if let Some(v) = v {
                args.insert(name.into(), v);
            }
        }
        let p = |name: &str| present(&args, name);
        let nul = |v: &Option<String>| v.as_deref().is_some_and(|v| v.contains('\0'));
        let dash = |v: &Option<String>| v.as_deref().is_some_and(|v| v.starts_with('-'));
        let ef = p("e").zip(p("f")).map(|(e, f)| e + &f);
        let must_refuse = ["a", "b", "c", "d", "g", "n", "m"].iter().any(|n| nul(&p(n)))
            || nul(&ef)
            || ["a", "b", "g", "m"].iter().any(|n| dash(&p(n)))
            || dash(&ef)
            || p("n").is_some_and(|n| n.starts_with('-') && !finite_number(&n));
        match render_argv(wrap, cmd, &args) {
            Ok(argv) => {
                prop_assert!(!must_refuse, "rendered {argv:?} from {args:?}");
                for (i, t) in argv.iter().enumerate() {
                    prop_assert!(!t.contains('\0'), "NUL in {argv:?}");
                    if t.starts_with('-') {
                        let written = MIX_FLAGS.contains(&t.as_str()) || t.starts_with("--opt=");
                        let number_after_n = i > 0 && argv[i - 1] == "-n" && finite_number(t);
                        prop_assert!(written || number_after_n, "token {t:?} of {argv:?} came from a value");
                    }
                }
            }
            Err(e) => {
                prop_assert!(must_refuse, "refused {args:?}: {e}");
                match e {
                    // The argument a NUL refusal names holds one, or shares its token with one that does.
                    RenderError::NulByte { arg } => {
                        prop_assert!(nul(&p(&arg)) || (arg == "e" && nul(&ef)), "{arg} holds no NUL")
                    }
                    RenderError::LooksLikeFlag { arg, value } => {
                        prop_assert!(value.starts_with('-'));
                        prop_assert!(p(&arg).is_some_and(|v| value.starts_with(&v)));
                    }
                    RenderError::EmptyRequired { arg } => {
                        prop_assert!(p(&arg).is_none_or(|v| v.is_empty()), "{arg} is not empty")
                    }
                }
            }
        }
    }

    /// A command without cli[] renders through wrap.argv_template under the same rule.
    #[test]
    fn argv_template_values_never_become_options(a in prop::option::of(text(8))) {
        let pack = render_pack();
        let (wrap, cmd) = (pack.wrap.as_ref().expect("wrap"), pack.command("run.fallback").expect("fallback"));
        let mut args = Map::new();
        if let Some(a) = &a {
            args.insert("a".into(), Value::String(a.clone()));
        }
        let a = a.filter(|a| !a.is_empty());
        match render_argv(wrap, cmd, &args) {
            Ok(argv) => {
                let expected: Vec<String> =
                    ["fallback".to_string()].into_iter().chain(a).chain(["--json".to_string()]).collect();
                prop_assert_eq!(argv, expected);
            }
            Err(_) => prop_assert!(a.is_some_and(|a| a.starts_with('-') || a.contains('\0'))),
        }
    }

    /// A pass-through word that starts with '-' passes only when pass_through.allowedOptions lists it, or
    /// lists a prefix of it ending in '='.
    #[test]
    fn pass_through_options_pass_only_when_listed(
        allowed in prop::collection::vec("--?[a-z]{1,4}=?", 0..4),
        word in prop_oneof![text(10), "--?[a-z]{1,5}(=[a-z-]{0,3})?"],
    ) {
        let pt = PassThrough {
            allowed_subcommands: vec!["log".into()],
            max_argv: 8,
            allowed_options: allowed.clone(),
            policy: Default::default(),
        };
        let listed = allowed.iter().any(|o| *o == word || (o.ends_with('=') && word.starts_with(o.as_str())));
        prop_assert_eq!(pt.allows_word(&word), !word.starts_with('-') || listed);
        for o in &allowed {
            prop_assert!(pt.allows_word(o));
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Templates (Template::parse, fill).

/// A template's parts as an author writes them: literal text (never `{{`, never a `{` right before a
/// placeholder, which no template can say) and placeholders, maybe padded with spaces.
#[derive(Debug, Clone)]
enum Part {
    Lit(String),
    Var(String, usize, usize),
}

fn parts() -> impl Strategy<Value = Vec<Part>> {
    let lit = "([^{]|\\{[^{]){1,6}".prop_map(Part::Lit);
    let name = "[A-Za-z0-9_-]{1,5}(\\.[A-Za-z0-9_-]{1,4}){0,2}";
    let var = (name, 0..3usize, 0..3usize).prop_map(|(n, l, r)| Part::Var(n, l, r));
    prop::collection::vec(prop_oneof![lit, var], 0..8)
}

fn source_of(parts: &[Part]) -> String {
    parts
        .iter()
        .map(|p| match p {
            Part::Lit(s) => s.clone(),
            Part::Var(n, l, r) => format!("{{{{{}{n}{}}}}}", " ".repeat(*l), " ".repeat(*r)),
        })
        .collect()
}

/// The pieces `parts` must parse to: adjacent literals merged.
fn pieces_of(parts: &[Part]) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::new();
    for p in parts {
        match (p, out.last_mut()) {
            (Part::Lit(s), Some(Piece::Lit(prev))) => prev.push_str(s),
            (Part::Lit(s), _) => out.push(Piece::Lit(s.clone())),
            (Part::Var(n, ..), _) => out.push(Piece::Var(n.clone())),
        }
    }
    out
}

proptest! {
    #![proptest_config(config(256))]

    /// Parsing never panics, on any text and on text made of template syntax.
    #[test]
    fn template_parse_never_panics(
        source in prop_oneof![
            text(40),
            prop::collection::vec(prop::sample::select(vec!["{{", "}}", "{", "}", "a", ".", " ", "-", "é", "\0"]), 0..16)
                .prop_map(|v| v.concat()),
        ]
    ) {
        if let Ok(t) = Template::parse(&source) {
            prop_assert_eq!(t.source(), source.as_str());
            for piece in t.pieces() {
                if let Piece::Lit(s) = piece {
                    prop_assert!(!s.is_empty() && !s.contains("{{"));
                }
            }
        }
    }

    /// A template written from parts parses to exactly those parts; filled with any values it holds every
    /// literal piece in order with each value in its place; and a value is copied, never read for
    /// placeholders (each placeholder is looked up once, values that look like placeholders included).
    #[test]
    fn fill_keeps_literals_in_order_and_values_inject_nothing(
        parts in parts(),
        values in prop::collection::vec(
            prop_oneof![text(8), "\\{\\{ ?[a-z.]{1,4} ?\\}\\}", Just("{{verb}}".to_string())], 8),
    ) {
        let source = source_of(&parts);
        let t = Template::parse(&source).map_err(|e| TestCaseError::fail(format!("{source:?}: {e}")))?;
        let expected_pieces = pieces_of(&parts);
        prop_assert_eq!(t.pieces(), expected_pieces.as_slice());
        let mut asked = Vec::new();
        let filled = t
            .fill(|v| {
                let value = values[asked.len() % values.len()].clone();
                asked.push(v.to_string());
                Some(value)
            })
            .expect("every placeholder has a value");
        prop_assert_eq!(&asked, &t.vars().collect::<Vec<_>>());
        let mut expected = String::new();
        let mut rest = filled.as_str();
        let mut i = 0;
        for piece in t.pieces() {
            let s = match piece {
                Piece::Lit(s) => s.clone(),
                Piece::Var(_) => {
                    i += 1;
                    values[(i - 1) % values.len()].clone()
                }
            };
            if let Piece::Lit(s) = piece {
                let at = rest.find(s.as_str());
                prop_assert!(at.is_some(), "literal {s:?} missing from {filled:?}");
                rest = &rest[at.unwrap_or(0) + s.len()..];
            }
            expected.push_str(&s);
        }
        prop_assert_eq!(filled, expected);
    }
}

// ---------------------------------------------------------------------------------------------------------
// The scrub (runtime::scrub).

/// Encoded forms shorter than this are not scrubbed (scrub.rs MIN_ENCODED); the secret as written always is.
const MIN_ENCODED: usize = 8;
const MARK: &str = "[redacted]";

/// Everything the scrub must remove for `secret`: the secret and its encodings of at least MIN_ENCODED.
fn needles(secret: &str) -> Vec<String> {
    let mut n: Vec<String> =
        encodings(secret.as_bytes()).into_iter().filter(|e| e.len() >= MIN_ENCODED).collect();
    n.push(secret.to_string());
    n
}

/// A secret stays in `s` when a needle is inside one of the stretches between redaction marks, or the
/// text ends with the first four or more bytes of one (output cut at max_output_bytes).
fn leaks(s: &str, needles: &[String]) -> Option<String> {
    let segments: Vec<&str> = s.split(MARK).collect();
    for needle in needles {
        if let Some(seg) = segments.iter().find(|seg| seg.contains(needle.as_str())) {
            return Some(format!("{needle:?} in {seg:?}"));
        }
        let last = segments.last().copied().unwrap_or_default();
        for k in 4..needle.len() {
            if needle.get(..k).is_some_and(|head| last.ends_with(head)) {
                return Some(format!("the head {:?} of {needle:?} ends {last:?}", &needle[..k]));
            }
        }
    }
    None
}

/// Text with secrets (and their encodings, and the head of one at the end) planted in it.
fn planted(forms: Vec<String>) -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        2 => text(12),
        2 => prop::sample::select(forms.clone()),
    ];
    let tail = prop::option::of((prop::sample::select(forms), any::<Index>()));
    (prop::collection::vec(piece, 0..6), tail).prop_map(|(pieces, tail)| {
        let mut s = pieces.concat();
        if let Some((form, at)) = tail {
            let cut = at.index(form.len().max(1));
            s.push_str(form.get(..cut).unwrap_or(&form));
        }
        s
    })
}

/// JSON output with planted text in values and in keys.
fn planted_json(forms: Vec<String>) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<i64>().prop_map(Value::from),
        planted(forms.clone()).prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((planted(forms.clone()), inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

type Secrets = BTreeMap<String, String>;

/// One to three secrets, each at least one char (the scrub skips empty fields).
fn secrets() -> impl Strategy<Value = Secrets> {
    let secret = prop_oneof![text(24), "[A-Za-z0-9_.~+/=-]{1,40}"].prop_filter("empty", |s| !s.is_empty());
    prop::collection::btree_map("[a-z]{1,6}", secret, 1..4)
}

fn all_forms(secrets: &Secrets) -> Vec<String> {
    secrets.values().flat_map(|s| needles(s)).collect()
}

fn envelope_with(secrets: Secrets) -> impl Strategy<Value = (Secrets, ResultEnvelope)> {
    let forms = all_forms(&secrets);
    let text = || prop::option::of(planted(forms.clone()));
    (Just(secrets), text(), text(), text(), text(), prop::option::of(planted_json(forms.clone()))).prop_map(
        |(secrets, error, stdout, stderr, title, result)| {
            let mut out = ResultEnvelope::empty("p", "v", true);
            out.error = error;
            out.stdout = stdout;
            out.stderr = stderr;
            out.title = title;
            out.result = result;
            (secrets, out)
        },
    )
}

fn minted(secrets: &Secrets) -> MintedBinding {
    MintedBinding { mode: BindingMode::User, fields: secrets.clone() }
}

/// Every string the scrub must clean: the text fields, and the result's values and keys.
fn strings_of(out: &ResultEnvelope) -> Vec<String> {
    fn walk(v: &Value, into: &mut Vec<String>) {
        match v {
            Value::String(s) => into.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|x| walk(x, into)),
            Value::Object(m) => m.iter().for_each(|(k, x)| {
                into.push(k.clone());
                walk(x, into)
            }),
            _ => {}
        }
    }
    let mut all: Vec<String> =
        [&out.error, &out.stdout, &out.stderr, &out.title].into_iter().flatten().cloned().collect();
    if let Some(r) = &out.result {
        walk(r, &mut all);
    }
    all
}

proptest! {
    #![proptest_config(config(128))]

    /// Secrets and their encodings planted anywhere in what a call returns (text fields, JSON values, JSON
    /// keys, cut off at the end) are gone after the scrub.
    #[test]
    fn no_secret_or_encoding_survives_the_scrub((secrets, mut out) in secrets().prop_flat_map(envelope_with)) {
        scrub(&mut out, &minted(&secrets));
        let needles = all_forms(&secrets);
        for s in strings_of(&out) {
            if let Some(leak) = leaks(&s, &needles) {
                return Err(TestCaseError::fail(format!("{leak}\nsecrets {secrets:?}")));
            }
        }
    }

    /// A secret of at least MIN_ENCODED bytes printed inside a longer byte stream as base64 (either alphabet,
    /// padded or not), hex or percent-encoding, at any offset, is found and removed.
    #[test]
    fn a_secret_encoded_inside_a_longer_stream_is_found(
        secret in prop_oneof![text(16), "[ -~]{8,24}"].prop_filter("short", |s| s.len() >= MIN_ENCODED),
        prefix in prop::collection::vec(any::<u8>(), 0..7),
        suffix in prop::collection::vec(any::<u8>(), 0..7),
        how in 0..7usize,
        before in text(6),
        after in text(6),
    ) {
        let stream = [prefix.as_slice(), secret.as_bytes(), suffix.as_slice()].concat();
        let printed = match how {
            0 => STANDARD.encode(&stream),
            1 => STANDARD_NO_PAD.encode(&stream),
            2 => URL_SAFE.encode(&stream),
            3 => URL_SAFE_NO_PAD.encode(&stream),
            4 => stream.iter().map(|b| format!("{b:02x}")).collect(),
            5 => stream.iter().map(|b| format!("{b:02X}")).collect(),
            // RFC 3986: unreserved bytes as they are, every other byte %XX.
            _ => stream
                .iter()
                .map(|&b| if b.is_ascii_alphanumeric() || b"-._~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") })
                .collect(),
        };
        let needles = needles(&secret);
        prop_assert!(needles.iter().any(|n| printed.contains(n.as_str())), "no form of {secret:?} in {printed}");
        let mut out = ResultEnvelope::empty("p", "v", true);
        out.stdout = Some(format!("{before}{printed}{after}"));
        let secrets: Secrets = [("token".to_string(), secret.clone())].into();
        scrub(&mut out, &minted(&secrets));
        let stdout = out.stdout.unwrap_or_default();
        prop_assert!(stdout.contains(MARK));
        prop_assert_eq!(leaks(&stdout, &needles), None);
    }

    /// A mock Binding's values are no secrets: the output stays as it was.
    #[test]
    fn a_mock_binding_scrubs_nothing((secrets, out) in secrets().prop_flat_map(envelope_with)) {
        let mut scrubbed = out.clone();
        scrub(&mut scrubbed, &MintedBinding { mode: BindingMode::Mock, fields: secrets });
        prop_assert_eq!(strings_of(&scrubbed), strings_of(&out));
    }
}

// ---------------------------------------------------------------------------------------------------------
// The audit digest (runtime::args_digest): SHA-256 of the args' canonical JSON, keys sorted at every level.

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |f| Number::from_f64(f).map(Value::Number)),
        text(8).prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(text(4), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn args_map() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(text(6), json_value(), 0..6).prop_map(|m| m.into_iter().collect())
}

/// The same map with the keys of every object, at every depth, in reverse insertion order.
fn reversed(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(m.iter().rev().map(|(k, v)| (k.clone(), reversed(v))).collect()),
        Value::Array(a) => Value::Array(a.iter().map(reversed).collect()),
        other => other.clone(),
    }
}

fn is_lower_hex_digest(d: &str) -> bool {
    d.len() == 64 && d.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

proptest! {
    #![proptest_config(config(256))]

    /// Key order, at any depth, does not change the digest.
    #[test]
    fn digest_ignores_insertion_order(args in args_map()) {
        let Value::Object(rev) = reversed(&Value::Object(args.clone())) else { unreachable!() };
        prop_assert_eq!(args_digest(&args), args_digest(&rev));
    }

    /// Different args (a value changed, a key added or removed) give different digests; the digest is 64
    /// lowercase hex digits.
    #[test]
    fn different_args_give_different_digests(
        a in args_map(),
        key in text(6),
        value in prop::option::of(json_value()),
    ) {
        let mut b = a.clone();
        match value {
            Some(v) => b.insert(key, v),
            None => b.remove(&key),
        };
        let (da, db) = (args_digest(&a), args_digest(&b));
        prop_assert!(is_lower_hex_digest(&da), "{da}");
        prop_assert_eq!(a == b, da == db, "{:?} vs {:?}", a, b);
    }
}

// ---------------------------------------------------------------------------------------------------------
// What the properties found, kept as examples.

/// no_secret_or_encoding_survives_the_scrub: a secret printed as a JSON key was left in place.
#[test]
fn the_scrub_cleans_json_keys() {
    let secret = "tok-5ecret-value";
    let mut out = ResultEnvelope::empty("p", "v", true);
    out.result =
        Some(json!({ "accounts": { secret: { "owner": "a" } }, "b64": { STANDARD.encode(secret): 1 } }));
    let secrets: Secrets = [("token".to_string(), secret.to_string())].into();
    scrub(&mut out, &minted(&secrets));
    let text = out.result.map(|r| r.to_string()).unwrap_or_default();
    assert!(!text.contains(secret) && !text.contains(&STANDARD_NO_PAD.encode(secret)), "{text}");
    assert!(text.contains("\"[redacted]\":{\"owner\":\"a\"}"), "{text}");
}

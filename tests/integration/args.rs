//! Arguments: refused when unknown or missing before anything runs; `k=v`, `k:=json` and bare words parse to the schema's types.

use serde_json::{json, Map, Value};

use crate::helpers::{repo, Fixture, TestDir};
use hcpx_pack::Pack;

fn transit() -> Pack {
    Pack::load(&repo().join("packs/transit")).unwrap()
}

fn ledger() -> Pack {
    Pack::load(&repo().join("packs/ledger")).unwrap()
}

fn words(w: &[&str]) -> Vec<String> {
    w.iter().map(|s| s.to_string()).collect()
}

fn typed_pack(t: &TestDir) -> Pack {
    let surface = json!({
        "id": "p", "kind": "wrap", "wrap": { "bin": "./bin/tool" },
        "verbs": { "put": {
            "description": "d.",
            "cli": ["t", "put"],
            "args": { "type": "object", "properties": {
                "n": { "type": "integer", "minimum": 0 },
                "x": { "type": "number" },
                "b": { "type": "boolean" },
                "s": { "type": "string" },
                "list": { "type": "array", "items": { "type": "string" } },
                "either": { "type": ["integer", "string"] }
            } }
        } }
    });
    let mut f = Fixture::with_surface(surface);
    f.files = vec![("bin/tool".into(), "#!/bin/sh\n".into(), true)];
    f.load(t)
}

#[test]
fn bare_words_fill_x_position_in_order() {
    let p = transit();
    let plan = p.command("plan").unwrap();
    let a = plan.args.parse_words("transit.plan", &words(&["A", "B"])).unwrap();
    assert_eq!(Value::Object(a), json!({ "from": "A", "to": "B" }));
    let mixed = plan.args.parse_words("transit.plan", &words(&["to=B", "A"])).unwrap();
    assert_eq!(mixed.get("from"), Some(&json!("A")));
    let err = plan.args.parse_words("transit.plan", &words(&["A", "B", "C"])).unwrap_err();
    assert!(err.0.contains("unexpected bare word \"C\""), "{err}");
    let err = p.command("status").unwrap().args.parse_words("transit.status", &words(&["now"])).unwrap_err();
    assert!(err.0.contains("takes no bare words"), "{err}");
}

#[test]
fn k_v_converts_to_the_schema_type() {
    let t = TestDir::new();
    let p = typed_pack(&t);
    let spec = &p.command("put").unwrap().args;
    let a = spec
        .parse_words(
            "p.put",
            &words(&["n=3", "x=2.5", "b=true", "s=007", "either=12", "list:=[\"a\",\"b\"]", "confirm=true"]),
        )
        .unwrap();
    assert_eq!(
        Value::Object(a),
        json!({ "n": 3, "x": 2.5, "b": true, "s": "007", "either": "12", "list": ["a", "b"], "confirm": true })
    );
    for (w, needle) in [
        ("n=three", "must be integer, not \"three\""),
        ("b=yes", "must be boolean"),
        ("list=a,b", "pass it as JSON: list:=<json>"),
        ("x:=nope", "is not JSON"),
        ("confirm=maybe", "must be boolean"),
    ] {
        let err = spec.parse_words("p.put", &words(&[w])).unwrap_err();
        assert!(err.0.contains(needle), "{w}: {err}");
    }
    let err = spec.parse_words("p.put", &words(&["s=a", "s=b"])).unwrap_err();
    assert!(err.0.contains("given twice"), "{err}");
}

#[test]
fn unknown_and_missing_arguments_are_named() {
    let p = ledger();
    let transfer = p.command("transfer").unwrap();
    let err = transfer
        .args
        .check("ledger.transfer", json!({ "amount": "1", "payee": "x", "amont": "2" }).as_object().unwrap())
        .unwrap_err();
    assert_eq!(err.0, "unknown argument `amont` for ledger.transfer; it takes amount, payee, memo");
    let err =
        transfer.args.check("ledger.transfer", json!({ "payee": "x" }).as_object().unwrap()).unwrap_err();
    assert_eq!(err.0, "missing required argument `amount` (e.g. amount=2.80) for ledger.transfer");
    let err = p
        .command("list")
        .unwrap()
        .args
        .check("ledger.list", json!({ "limit": 3 }).as_object().unwrap())
        .unwrap_err();
    assert_eq!(err.0, "unknown argument `limit` for ledger.list; it takes no arguments");
}

#[test]
fn schema_violations_name_the_argument() {
    let t = TestDir::new();
    let p = typed_pack(&t);
    let spec = &p.command("put").unwrap().args;
    let err = spec.check("p.put", json!({ "n": -1 }).as_object().unwrap()).unwrap_err();
    assert!(err.0.starts_with("invalid argument `n` for p.put:"), "{err}");
    let err = spec.check("p.put", json!({ "s": 5 }).as_object().unwrap()).unwrap_err();
    assert!(err.0.contains("`s`") && err.0.contains("string"), "{err}");
}

#[test]
fn confirm_apply_and_mock_are_always_accepted() {
    let p = ledger();
    let list = p.command("list").unwrap();
    let c = list.args.check("ledger.list", json!({ "confirm": true }).as_object().unwrap()).unwrap();
    assert!(c.confirmed && !c.mock && c.values.is_empty());
    let c = list
        .args
        .check("ledger.list", json!({ "apply": true, "mode": "mock" }).as_object().unwrap())
        .unwrap();
    assert!(c.confirmed && c.mock);
    let c = list.args.check("ledger.list", json!({ "confirm": false }).as_object().unwrap()).unwrap();
    assert!(!c.confirmed);
    let err = list.args.check("ledger.list", json!({ "confirm": "yes" }).as_object().unwrap()).unwrap_err();
    assert!(err.0.contains("must be true or false"), "{err}");
    let err = list.args.check("ledger.list", json!({ "mode": "live" }).as_object().unwrap()).unwrap_err();
    assert!(err.0.contains("may only be \"mock\""), "{err}");
}

#[test]
fn an_args_schema_is_compiled_once_and_reused() {
    let p = transit();
    let plan = p.command("plan").unwrap();
    for i in 0..100 {
        let a: Map<String, Value> =
            json!({ "from": format!("S{i}"), "to": "B" }).as_object().cloned().unwrap();
        assert!(plan.args.check("transit.plan", &a).is_ok());
    }
    assert_eq!(plan.args.required(), ["from", "to"]);
    assert_eq!(plan.args.props()["from"].example, Some(json!("A")));
}

/// A schema of simple typed properties is validated without compiling JSON Schema; it must refuse and accept
/// exactly what the same schema compiled by `jsonschema` does, with the same message.
#[test]
fn simple_schemas_validate_exactly_as_json_schema_does() {
    use hcpx_pack::args::ArgSpec;
    let values = [
        json!("x"),
        json!(""),
        json!("-1"),
        json!(0),
        json!(-1),
        json!(1),
        json!(1.0),
        json!(-0.0),
        json!(1.5),
        json!(1e20),
        json!(1.5e300),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(true),
        json!(false),
        Value::Null,
        json!([]),
        json!([1]),
        json!({}),
        json!({ "a": 1 }),
    ];
    for t in ["string", "integer", "number", "boolean"] {
        let simple = json!({ "type": "object", "properties": { "v": { "type": t, "description": "d.", "examples": [], "x-position": 0 } } });
        let mut full = simple.clone();
        full["additionalProperties"] = json!(true); // no constraint, but not a simple schema: compiled by jsonschema
        let (simple, full) =
            (ArgSpec::compile(Some(&simple)).unwrap(), ArgSpec::compile(Some(&full)).unwrap());
        for v in &values {
            let args = json!({ "v": v }).as_object().cloned().unwrap();
            let (a, b) = (simple.check("p.c", &args), full.check("p.c", &args));
            assert_eq!(
                a.as_ref().map_err(|e| &e.0).map(|c| &c.values),
                b.as_ref().map_err(|e| &e.0).map(|c| &c.values),
                "type {t}, value {v}"
            );
        }
    }
    // A malformed simple-looking schema is still refused at load, by the meta-schema.
    for bad in [
        json!({ "properties": { "v": { "type": "strng" } } }),
        json!({ "properties": { "v": { "type": "string", "description": 5 } } }),
    ] {
        assert!(ArgSpec::compile(Some(&bad)).is_err(), "{bad}");
    }
}

//! The settings' keys, their checks and the changes they report, on the file store.

use super::*;
use crate::model::{Grants, Invoker};
use serde_json::json;

fn store() -> (tempfile::TempDir, Store, Principal) {
    let t = tempfile::tempdir().unwrap();
    let s = Store::open(t.path()).unwrap();
    (t, s, Principal::local(Grants::All, Invoker::Cli))
}

fn value_of(s: &Store, key: &str) -> (Value, bool) {
    let all = s.settings(Some(key)).unwrap();
    assert_eq!(all.len(), 1, "{all:?}");
    (all[0].value.clone(), all[0].default)
}

#[test]
fn every_field_has_a_key_and_defaults_are_marked() {
    let (_t, s, _) = store();
    let keys: Vec<String> = s.settings(None).unwrap().into_iter().map(|x| x.key).collect();
    for k in [
        "timeout_ms",
        "require",
        "disable",
        "human_approval.ttl_s",
        "human_approval.commands",
        "tasks.keep_ms",
        "egress.hosts",
        "packs",
        "allow_components",
    ] {
        assert!(keys.contains(&k.to_string()), "{k} in {keys:?}");
    }
    assert_eq!(value_of(&s, "timeout_ms"), (json!(crate::config::DEFAULT_TIMEOUT_MS), true));
    assert_eq!(value_of(&s, "human_approval.ttl_s"), (json!(900), true));
}

#[test]
fn set_and_unset_change_the_document_and_say_old_and_new() {
    let (_t, s, by) = store();
    let c = s.setting_set("timeout_ms", json!(30000), &by).unwrap();
    assert_eq!(
        c.changes,
        vec![Change {
            key: "timeout_ms".into(),
            old: Value::Null,
            new: json!(30000),
            default: Some(json!(60000))
        }]
    );
    assert_eq!(s.sandbox().unwrap().timeout_ms, Some(30000));
    assert_eq!(value_of(&s, "timeout_ms"), (json!(30000), false));
    s.setting_set("human_approval.commands", json!([{"pack_id": "ledger"}]), &by).unwrap();
    s.setting_set("human_approval.elicitation", json!(false), &by).unwrap();
    assert!(s.sandbox().unwrap().human_approval.as_ref().unwrap().covers("ledger", "x"));
    s.setting_set("packs.notes.write", json!(["/srv/notes"]), &by).unwrap();
    s.setting_set("egress.hosts.api.internal.example", json!(["10.0.0.7"]), &by).unwrap();
    let cfg = s.sandbox().unwrap();
    assert_eq!(cfg.packs["notes"].write, vec![std::path::PathBuf::from("/srv/notes")]);
    assert_eq!(cfg.egress.hosts.len(), 1);
    let c = s.setting_unset("timeout_ms", &by).unwrap();
    assert_eq!((c.changes[0].old.clone(), c.changes[0].new.clone()), (json!(30000), Value::Null));
    assert_eq!(s.sandbox().unwrap().timeout_ms, None);
    // Unsetting what is not set changes nothing.
    assert!(s.setting_unset("timeout_ms", &by).unwrap().changes.is_empty());
    let lines = s.audit().unwrap();
    let last = lines.last().unwrap();
    assert_eq!(last.action, Some(AuditAction::ConfigUnset));
    let setting = last.setting.as_ref().unwrap();
    assert_eq!(
        (setting.key.as_str(), setting.old.clone(), setting.new.clone()),
        ("timeout_ms", Some(json!(30000)), None)
    );
}

#[test]
fn a_bad_value_or_key_is_refused_with_its_code_and_nothing_is_written() {
    let (t, s, by) = store();
    s.setting_set("require", json!("full"), &by).unwrap();
    let before = std::fs::read(t.path().join("sandbox.json")).unwrap();
    let e = s.setting_set("timeout_ms", json!("fast"), &by).unwrap_err();
    assert_eq!(e.code(), "invalid_setting");
    assert!(e.to_string().contains("timeout_ms") && e.to_string().contains("whole number"), "{e}");
    let e = s.setting_set("require", json!("strict"), &by).unwrap_err();
    assert!(e.to_string().contains("full"), "{e}");
    let e = s.setting_set("human_approval.ttl", json!(5), &by).unwrap_err();
    assert_eq!(e.code(), "unknown_setting");
    assert!(e.to_string().contains("did you mean human_approval.ttl_s"), "{e}");
    let e = s.setting_set("timout_ms", json!(5), &by).unwrap_err();
    assert!(e.to_string().contains("did you mean timeout_ms"), "{e}");
    let e = s.setting_set("ttl_s", json!(5), &by).unwrap_err();
    assert!(e.to_string().contains("human_approval.ttl_s"), "{e}");
    let e = s.setting_set("human_approval.commands", json!([{"pack_id": "Ledger"}]), &by).unwrap_err();
    assert!(e.to_string().contains("\"Ledger\""), "{e}");
    let e = s.setting_set("packs.notes.hosts", json!(["api.test"]), &by).unwrap_err();
    assert_eq!(e.code(), "setting_has_command");
    let e = s.setting_set("packs.notes.read", json!([t.path()]), &by).unwrap_err();
    assert!(e.to_string().contains("store"), "{e}");
    let e = s.setting_set("tasks.keep_ms", json!(10), &by).unwrap_err();
    assert!(e.to_string().contains("at least 1000"), "{e}");
    assert_eq!(std::fs::read(t.path().join("sandbox.json")).unwrap(), before);
}

#[test]
fn a_document_with_a_typo_is_refused_until_the_typo_is_unset() {
    let (t, s, by) = store();
    std::fs::write(t.path().join("sandbox.json"), r#"{"timout_ms": 5, "require": "full"}"#).unwrap();
    assert_eq!(s.settings(None).unwrap_err().code(), "settings_do_not_load");
    let e = s.setting_set("memory_mb", json!(32), &by).unwrap_err();
    assert!(e.to_string().contains("timout_ms"), "{e}");
    std::fs::write(t.path().join("sandbox.json"), r#"{"timout_ms": 5, "require": "full", "memroy_mb": 1}"#)
        .unwrap();
    let c = s.setting_unset("memroy_mb", &by).unwrap();
    assert!(c.still_invalid.as_deref().is_some_and(|w| w.contains("timout_ms")), "{c:?}");
    let c = s.setting_unset("timout_ms", &by).unwrap();
    assert_eq!(c.changes[0].key, "timout_ms");
    assert!(c.still_invalid.is_none());
    assert!(s.sandbox().unwrap().requires_full());
}

#[test]
fn a_document_that_is_not_json_is_named_and_never_removed() {
    let (t, s, by) = store();
    std::fs::write(t.path().join("sandbox.json"), "{ not json").unwrap();
    for e in [
        s.settings(None).unwrap_err(),
        s.setting_unset("timeout_ms", &by).unwrap_err(),
        s.setting_set("timeout_ms", json!(5), &by).unwrap_err(),
    ] {
        assert_eq!(e.code(), "settings_do_not_load");
        assert!(
            e.to_string().contains("line 1 column 3") && e.to_string().contains("never remove it"),
            "{e}"
        );
    }
    assert_eq!(std::fs::read_to_string(t.path().join("sandbox.json")).unwrap(), "{ not json");
}

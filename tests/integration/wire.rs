//! Every wire name has one source (`wire_enum!`): each enum's spellings round-trip through `as_str`,
//! `FromStr`, `Display` and serde, are unique, and an unknown name is refused with the list of known ones.

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt::Debug;
use std::str::FromStr;

use hcpx_author::check::{Category, Severity};
use hcpx_model::{BindingMode, Capability, Code, Invoker, LayerName, LayerStatus, PreviewKind, SandboxMode};
use hcpx_pack::pack::raw::Delivery;
use hcpx_pack::pack::{AdapterKind, Hub, Land, NetKind, Operation, Plane, Transport, WorkspaceMode};

fn round_trip<T>(all: &[T], names: &[&str], as_str: fn(T) -> &'static str)
where
    T: Copy + PartialEq + Debug + Serialize + DeserializeOwned + FromStr + std::fmt::Display,
    <T as FromStr>::Err: Debug,
{
    assert_eq!(all.len(), names.len());
    let mut seen = std::collections::BTreeSet::new();
    for (v, name) in all.iter().zip(names) {
        assert_eq!(as_str(*v), *name);
        assert!(seen.insert(*name), "{name} is spelt twice");
        assert_eq!(v.to_string(), *name);
        assert_eq!(T::from_str(name).unwrap(), *v);
        let json = serde_json::to_string(v).unwrap();
        assert_eq!(json, format!("\"{name}\""));
        assert_eq!(serde_json::from_str::<T>(&json).unwrap(), *v);
    }
    assert!(T::from_str("no-such-name").is_err());
    let err = serde_json::from_str::<T>("\"no-such-name\"").unwrap_err().to_string();
    assert!(err.contains("unknown variant `no-such-name`") && err.contains(names[0]), "{err}");
}

macro_rules! check {
    ($($t:ty),+ $(,)?) => {
        $(round_trip::<$t>(<$t>::ALL, <$t>::NAMES, <$t>::as_str);)+
    };
}

#[test]
fn every_wire_enum_round_trips() {
    check!(
        Code,
        Invoker,
        Capability,
        BindingMode,
        PreviewKind,
        LayerName,
        LayerStatus,
        SandboxMode,
        AdapterKind,
        Plane,
        Transport,
        Hub,
        WorkspaceMode,
        Operation,
        Land,
        NetKind,
        Delivery,
        Severity,
        Category,
    );
}

#[test]
fn spellings_are_the_documented_ones() {
    // A few that agents, hosts and operators type: a rename here is a breaking change.
    assert_eq!(Code::ConfirmRequired.as_str(), "confirm_required");
    assert_eq!(Capability::ExecWrite.as_str(), "verb.exec.write");
    assert_eq!(LayerName::NoNewPrivs.as_str(), "no-new-privs");
    assert_eq!(Hub::LocalCredential.as_str(), "local-credential");
    assert_eq!(AdapterKind::SenseOnly.as_str(), "sense_only");
    assert_eq!(SandboxMode::NativeLocal.as_str(), "native-local");
    assert_eq!(Transport::JsonExec.as_str(), "json_exec");
}

#[test]
fn the_bool_words_are_one_rule() {
    use hcpx_model::wire::parse_bool;
    assert_eq!((parse_bool("true"), parse_bool("false"), parse_bool("yes")), (Some(true), Some(false), None));
}

/// docs/runtime.md's table of codes is `Code::status()`, row for row, and names every code.
#[test]
fn the_face_table_in_the_docs_is_the_code_table() {
    let doc = std::fs::read_to_string(crate::helpers::repo().join("docs/runtime.md")).unwrap();
    let mut seen = Vec::new();
    for line in doc.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let Ok(code) = cells[0].trim_matches('`').parse::<Code>() else { continue };
        let s = code.status();
        assert_eq!(
            (cells[1], cells[2]),
            (s.exit.to_string().as_str(), s.http.to_string().as_str()),
            "{line}"
        );
        assert!(s.mcp_is_error);
        seen.push(code);
    }
    assert_eq!(seen, Code::ALL, "docs/runtime.md must list every code once, in order");
    assert_eq!(Code::SandboxDenied.status().exit, 127, "docs/spec.md §11");
}

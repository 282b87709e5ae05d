//! Every wire name has one source (`wire_enum!`): each enum's spellings round-trip through `as_str`,
//! `FromStr`, `Display` and serde, are unique, and an unknown name is refused with the list of known ones.

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt::Debug;
use std::str::FromStr;

use hcpx::check::{Category, Severity};
use hcpx::model::{BindingMode, Capability, Code, Invoker, LayerName, LayerStatus, PreviewKind, SandboxMode};
use hcpx::pack::raw::Delivery;
use hcpx::pack::{AdapterKind, Hub, Land, NetKind, Operation, Plane, Transport, WorkspaceMode};

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
    use hcpx::model::wire::parse_bool;
    assert_eq!((parse_bool("true"), parse_bool("false"), parse_bool("yes")), (Some(true), Some(false), None));
}

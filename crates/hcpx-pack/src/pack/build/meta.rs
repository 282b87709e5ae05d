//! The manifest's `hcp` metadata object: checked against the manifest when the pack declares it, derived from
//! the manifest when it does not.

use super::SURFACE;
use crate::model::diagnostic::{Issues, LintKind};
use crate::pack::raw::*;
use crate::pack::Binding;

/// Validates a declared `hcp` object against the manifest, or derives one.
pub(super) fn check_meta(
    m: &RawManifest,
    kind: AdapterKind,
    plane: Plane,
    binding: &Binding,
    is: &mut Issues,
) -> RawMeta {
    let derived = RawMeta {
        hcp: 1,
        pack_id: m.id.clone(),
        adapter_kind: Some(kind),
        binding: Some(RawMetaBinding {
            mode: binding.mode,
            hub: binding.hub,
            family: None,
            connect_provider_id: None,
        }),
        wrap: m.wrap.as_ref().and_then(|w| w.bin.clone()).map(|bin| RawMetaWrap { bin }),
        component: m.component.clone(),
        plane: Some(plane),
        transports: m.transports.clone(),
    };
    let Some(meta) = &m.hcp else { return derived };
    let mut mismatch = |field: &str, declared: String, actual: String| {
        is.push(
            LintKind::HcpMismatch,
            SURFACE,
            format!("/hcp/{field}"),
            format!("hcp.{field} is {declared} but the manifest says {actual}"),
            format!("set hcp.{field} to {actual}, or remove the `hcp` object and let the runtime derive it"),
        );
    };
    if meta.hcp != 1 {
        mismatch("hcp", meta.hcp.to_string(), "1 (HCP/1.x)".into());
    }
    if meta.pack_id != m.id {
        mismatch("pack_id", format!("{:?}", meta.pack_id), format!("{:?}", m.id));
    }
    if let Some(k) = meta.adapter_kind {
        if k != kind {
            mismatch("adapter_kind", format!("{:?}", k.as_str()), format!("{:?}", kind.as_str()));
        }
    }
    if let Some(p) = meta.plane {
        if p != plane {
            mismatch("plane", format!("{:?}", p.as_str()), format!("{:?}", plane.as_str()));
        }
    }
    if let (Some(t), declared) = (&meta.transports, &m.transports) {
        let actual = declared.clone().unwrap_or_else(|| vec![Transport::Cli, Transport::JsonExec]);
        if *t != actual {
            let names = |l: &[Transport]| format!("{:?}", l.iter().map(|t| t.as_str()).collect::<Vec<_>>());
            mismatch("transports", names(t), names(&actual));
        }
    }
    if let Some(b) = &meta.binding {
        if b.mode != binding.mode {
            mismatch("binding", b.mode.as_str().into(), binding.mode.as_str().into());
        } else if b.hub.is_some() && b.hub != binding.hub {
            let hub = |h: Option<Hub>| h.map_or("none given", Hub::as_str);
            mismatch("binding", format!("hub {}", hub(b.hub)), format!("hub {}", hub(binding.hub)));
        } else if b.family.as_ref().is_some_and(|f| *f != binding.family) {
            mismatch("binding", format!("family {:?}", b.family), format!("family {:?}", binding.family));
        }
    }
    if let Some(w) = &meta.wrap {
        let actual = m.wrap.as_ref().and_then(|w| w.bin.clone()).unwrap_or_default();
        if w.bin != actual {
            mismatch("wrap", format!("bin {:?}", w.bin), format!("bin {actual:?}"));
        }
    }
    if let Some(c) = &meta.component {
        let actual = m.component.as_ref().map(|c| c.path.clone()).unwrap_or_default();
        if c.path != actual {
            mismatch("component", format!("path {:?}", c.path), format!("path {actual:?}"));
        }
    }
    meta.clone()
}

//! Which language a composite's component was written in, read from the marks its toolchain leaves in the binary,
//! so a finding's fix names that language's own way (raise `Err` in Python, throw a string in JavaScript).

use crate::pack::Pack;

/// The language a composite's guest is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GuestLang {
    /// A crate built with cargo for wasm32-wasip2 (wit-bindgen).
    Rust,
    /// A module built with componentize-py (CPython for WASI, pre-initialised).
    Python,
    /// A module built with componentize-js (SpiderMonkey for WASI, pre-initialised).
    Js,
}

/// The toolchain marks looked for, in the order they are tried: componentize-py and componentize-js name
/// themselves in the component's producers section; a Rust guest names wit-bindgen's Rust generator.
const MARKS: [(&[u8], GuestLang); 3] = [
    (b"componentize-py", GuestLang::Python),
    (b"ComponentizeJS", GuestLang::Js),
    (b"wit-bindgen-rust", GuestLang::Rust),
];

/// The language of `pack`'s component, when it is a composite whose component names its toolchain.
pub fn sniff(pack: &Pack) -> Option<GuestLang> {
    if pack.kind != crate::pack::AdapterKind::Composite {
        return None;
    }
    let path = pack.dir.join(pack.component.as_deref()?);
    let len = std::fs::metadata(&path).ok()?.len();
    if len > crate::adapter::composite::MAX_COMPONENT_BYTES {
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    MARKS.iter().find(|(mark, _)| bytes.windows(mark.len()).any(|w| w == *mark)).map(|(_, lang)| *lang)
}

/// How a guest in `lang` ends a call with an error message (the `err` of `exec`'s result).
pub fn err_how(lang: Option<GuestLang>) -> &'static str {
    match lang {
        Some(GuestLang::Python) => "raise `componentize_py_types.Err(\"message\")` from `WitWorld.exec` (any other exception traps the call)",
        Some(GuestLang::Js) => "throw a string from the exported `exec` (`throw \"message\"`): it becomes the `err`",
        _ => "return `Err(message)` from the component's `exec`",
    }
}

/// Where a guest in `lang` answers a call.
pub fn exec_fn(lang: Option<GuestLang>) -> &'static str {
    match lang {
        Some(GuestLang::Python) => "`WitWorld.exec` in the Python module",
        Some(GuestLang::Js) => "the exported `exec` of the JavaScript module",
        _ => "the component's `exec`",
    }
}

/// How a guest in `lang` writes a log line (the envelope's stderr).
pub fn log_how(lang: Option<GuestLang>) -> &'static str {
    match lang {
        Some(GuestLang::Python) => {
            "`host.log(host.Level.INFO, ...)` (`from wit_world.imports import host`; `print` goes nowhere)"
        }
        Some(GuestLang::Js) => {
            "`log('info', ...)` (`import { log } from 'hcp:adapter/host@0.2.0'`, `@0.1.0` for a guest of that world; `console.log` goes nowhere)"
        }
        _ => "`hcp::adapter::host::log`",
    }
}

/// How a guest in `lang` makes its JSON text.
pub fn json_how(lang: Option<GuestLang>) -> &'static str {
    match lang {
        Some(GuestLang::Python) => "`json.dumps` of a dict",
        Some(GuestLang::Js) => "`JSON.stringify` of an object",
        _ => "serde_json on the guest side",
    }
}

/// How the component of a guest in `lang` is rebuilt.
pub fn rebuild(lang: Option<GuestLang>) -> &'static str {
    match lang {
        Some(GuestLang::Python) => "rebuild adapter.wasm with componentize-py (the pack's build.sh)",
        Some(GuestLang::Js) => "rebuild adapter.wasm with componentize-js (the pack's build.sh)",
        Some(GuestLang::Rust) => "rebuild adapter.wasm with cargo for wasm32-wasip2 (the pack's build.sh)",
        None => "rebuild adapter.wasm",
    }
}

//! The bottom layer: the values every other layer speaks — codes, envelopes, Principals and grants,
//! diagnostics, confinement words, digests, names and time. It imports nothing else of the crate.
//!
//! Layers (docs/architecture.md): model ← template, args, title ← pack ← render, lint ← store ← sandbox ←
//! adapter ← runtime ← tools (trial, eval, check, scaffold) ← faces (the CLI). `tests/integration/layers.rs`
//! fails when a module imports upward.

pub mod wire;

pub mod binding;
pub mod cancel;
pub mod clock;
pub mod code;
pub mod confinement;
pub mod diagnostic;
pub mod digest;
pub mod envelope;
pub mod grants;
pub mod io;
pub mod lint_kinds;
pub mod naming;
pub mod preview;
pub mod principal;
pub mod shown;
pub mod suggest;

pub use binding::{BindingMode, MintedBinding};
pub use cancel::{Cancel, CancelOnDrop};
pub use code::{Code, Denial};
pub use confinement::{LayerName, LayerStatus, SandboxMode, SandboxReport};
pub use diagnostic::{LintIssue, LintKind};
pub use envelope::{Envelope, ResultEnvelope};
pub use grants::{Capability, Grant, Grants};
pub use io::io_reason;
pub use preview::{Preview, PreviewKind};
pub use principal::{Invoker, Principal};

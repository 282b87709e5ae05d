//! hcpx-model: the values every layer of hcpx speaks — codes and denials, envelopes, Principals and grants,
//! diagnostics, confinement words, digests, names and time. The bottom of the workspace (docs/architecture.md).
//!
//! May use: serde and the small crates beside it (no I/O beyond reading the clock). Must never: depend on another
//! hcpx crate, touch the file system, spawn, or hold `unsafe` code.

#![forbid(unsafe_code)]

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

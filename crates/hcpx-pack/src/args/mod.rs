//! Command arguments: the `args` JSON Schema compiled once per command, and the checks every call passes before anything runs.

mod call;
mod schema;

use indexmap::IndexMap;
use serde_json::Value;
use std::fmt;

pub use call::{ArgError, CheckedArgs};
pub use schema::SchemaProblem;

/// Arguments every command accepts, always as booleans: they satisfy the confirm gate.
pub const GATE_ARGS: [&str; 2] = ["confirm", "apply"];

/// The envelope's `mode` (`"mock"` asks for an explicit mock Binding): reserved, no command may declare it.
pub const MODE_ARG: &str = "mode";

/// The id of a person's approval (`sandbox.json` `human_approval`): reserved, no command may declare it.
pub const APPROVAL_ARG: &str = "approval_id";

/// One declared argument.
#[derive(Debug, Clone)]
pub struct Prop {
    /// JSON Schema `type`, as a list (empty when the schema gives none).
    pub types: Vec<String>,
    pub description: Option<String>,
    /// The first of `examples`, used by `hcpx commands` and `--init-evals`.
    pub example: Option<Value>,
    /// `x-position`: which bare word of a command line fills it (0 is the first).
    pub position: Option<usize>,
    /// `x-path`: `Some(true)` when the value names a file or directory beneath the working directory (the
    /// runtime resolves it there or refuses it), `Some(false)` when a path-like name is not one (a JSON path).
    pub path: Option<bool>,
    /// The values are closed: an `enum`, a `const`, a boolean, a number, or a string `pattern` that admits no
    /// quote, backslash, semicolon or whitespace (what query and script injection need).
    pub closed: bool,
}

/// A command's compiled argument schema.
pub struct ArgSpec {
    /// The schema as the pack declares it (an empty object schema when it declares none): what hosts are
    /// given as a tool's input schema.
    schema: Value,
    props: IndexMap<String, Prop>,
    required: Vec<String>,
    positions: Vec<String>,
    validator: Validation,
}

/// How a command's argument values are validated.
enum Validation {
    /// The command takes no arguments: nothing to validate.
    Nothing,
    /// Every property declares one JSON type and nothing else constrains it: each value's type is checked
    /// here. This is what most commands' schemas are, and it spares every process compiling the JSON Schema
    /// meta-schema (about half a millisecond of each `hcpx exec`; docs/perf-log.md).
    Types,
    /// Anything richer: the schema compiled by `jsonschema`.
    Schema(Box<jsonschema::Validator>),
}

impl fmt::Debug for ArgSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArgSpec")
            .field("props", &self.props)
            .field("required", &self.required)
            .finish_non_exhaustive()
    }
}

impl ArgSpec {
    /// An empty spec: the command takes no arguments.
    pub fn none() -> ArgSpec {
        ArgSpec {
            schema: serde_json::json!({ "type": "object", "properties": {} }),
            props: IndexMap::new(),
            required: Vec::new(),
            positions: Vec::new(),
            validator: Validation::Nothing,
        }
    }

    /// The declared schema (an empty object schema when none was declared).
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// The declared arguments, in manifest order.
    pub fn props(&self) -> &IndexMap<String, Prop> {
        &self.props
    }

    /// The required arguments.
    pub fn required(&self) -> &[String] {
        &self.required
    }

    /// True when `name` is a declared argument.
    pub fn declares(&self, name: &str) -> bool {
        self.props.contains_key(name)
    }
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => String::new(),
    }
}

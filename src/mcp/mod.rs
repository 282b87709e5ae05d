//! The MCP face: the activated packs served as tools to an agent host. It authenticates a Principal and
//! builds envelopes; every policy, confirm and argument decision stays in the runtime's one pipeline.

pub mod approval;
pub mod call;
pub mod server;
pub mod single;
pub mod tools;

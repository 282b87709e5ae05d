//! The approval card a person sees before a confirm-gated write runs (docs/spec.md §3).

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use super::wire::wire_enum;

wire_enum! {
    /// `preview.kind`: how a host lays the card out.
    pub enum PreviewKind ("preview kind") {
        Message = "message",
        Payment = "payment",
        Event = "event",
        Removal = "removal",
        Publish = "publish",
        Record = "record",
        Fields = "fields",
    }
}

/// A filled approval card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preview {
    pub kind: PreviewKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub fields: IndexMap<String, String>,
}

//! `hcpx sense emit|watch`: push a pack's declared stimulus as the local Principal, and watch the stimuli of the
//! packs it holds `sense.announce` for (docs/sense.md).

use serde::Serialize;
use serde_json::Value;
use std::io::Read;

use super::{open_store, open_store_watched, SenseCmd};
use crate::output::Printer;
use crate::report::{CliError, Report, Text};
use hcpx_model::{Denial, Invoker};
use hcpx_runtime::Runtime;
use hcpx_store::sense::{SenseEvent, MAX_PAYLOAD_BYTES};

/// How often `watch --follow` looks at the store for new events.
const POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// Runs `hcpx sense …`.
pub fn run(p: &Printer, c: &SenseCmd) -> anyhow::Result<u8> {
    let store = match c {
        SenseCmd::Watch { follow: true, .. } => open_store_watched()?,
        _ => open_store()?,
    };
    let principal = store.local_principal(Invoker::Cli)?;
    let runtime = Runtime::new(store);
    match c {
        SenseCmd::Emit { pack, reference } => {
            let mut text = String::new();
            let limit = (MAX_PAYLOAD_BYTES as u64) * 2;
            std::io::stdin()
                .take(limit)
                .read_to_string(&mut text)
                .map_err(|e| invalid(format!("cannot read the payload from stdin: {e}; pipe JSON in")))?;
            let payload = if text.trim().is_empty() {
                Value::Object(serde_json::Map::new())
            } else {
                serde_json::from_str::<Value>(&text).map_err(|e| {
                    invalid(format!(
                        "the payload on stdin is not JSON ({e}); pipe one JSON value, e.g. echo '{{\"id\":\"i-1\"}}' | hcpx sense emit {pack} {reference}"
                    ))
                })?
            };
            let event = runtime.sense_emit(&principal, pack, reference, payload).map_err(refused)?;
            Ok(p.report(&Emitted { ok: true, event, pack, reference }))
        }
        SenseCmd::Watch { pack, after, follow } => {
            let pack = pack.as_deref();
            // The log's version before the read: an event recorded between the two is seen by the next poll.
            let mut seen = runtime.sense_version(&principal);
            let events = runtime.sense_events(&principal, *after, pack).map_err(refused)?;
            let mut last = events.last().map_or(*after, |e| e.id);
            if !follow {
                return Ok(p.report(&Events { ok: true, events, last_id: last }));
            }
            // The stream: each event as it is seen, a JSON line apiece under `--json`; it ends only on a denial.
            events.iter().for_each(|e| p.report_line(&Event(e)));
            loop {
                std::thread::sleep(POLL);
                // The local grants as they are now: a grant taken back ends the watch with the denial.
                let principal = runtime.store().local_principal(Invoker::Cli)?;
                runtime.sense_may_watch(&principal, pack).map_err(refused)?;
                let now = runtime.sense_version(&principal);
                if now == seen {
                    continue;
                }
                seen = now;
                // A grant revoked while watching ends the watch with the denial.
                for e in &runtime.sense_events(&principal, last, pack).map_err(refused)? {
                    p.report_line(&Event(e));
                    last = e.id;
                }
            }
        }
    }
}

/// `hcpx sense emit`: the event recorded.
#[derive(Serialize)]
struct Emitted<'a> {
    ok: bool,
    event: SenseEvent,
    /// The pack and trigger as the command line named them.
    #[serde(skip)]
    pack: &'a str,
    #[serde(skip)]
    reference: &'a str,
}

impl Report for Emitted<'_> {
    fn text(&self, out: &Text<'_>) {
        out.message(&format!("recorded {} {} as event {}", self.pack, self.reference, self.event.id));
    }
}

/// `hcpx sense watch` without `--follow`: the events after `--after`, and the last one's id.
#[derive(Serialize)]
struct Events {
    ok: bool,
    events: Vec<SenseEvent>,
    last_id: u64,
}

impl Report for Events {
    fn text(&self, out: &Text<'_>) {
        for e in &self.events {
            Event(e).text(out);
        }
    }
}

/// One event: a JSON line under `--json`, else `ID AT PACK REF PAYLOAD`.
#[derive(Serialize)]
#[serde(transparent)]
struct Event<'a>(&'a SenseEvent);

impl Report for Event<'_> {
    fn text(&self, out: &Text<'_>) {
        let e = self.0;
        out.data(&format!("{}  {}  {}  {}  {}", e.id, e.at, e.pack_id, e.reference, e.payload));
    }
}

fn invalid(message: String) -> CliError {
    CliError::denied(hcpx_model::Code::InvalidArgs, message)
}

/// A denial: `{ok, code, error}` under `--json`, else the message on stderr; the code's exit status.
fn refused(d: Denial) -> CliError {
    CliError::denied(d.code, d.message)
}

//! `hcpx sense emit|watch`: push a pack's declared stimulus as the local Principal, and watch the stimuli of the
//! packs it holds `sense.announce` for (docs/sense.md).

use serde_json::{json, Value};
use std::io::Read;

use super::{exit, open_store, open_store_watched, SenseCmd};
use crate::output::Printer;
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
            if let Err(e) = std::io::stdin().take(limit).read_to_string(&mut text) {
                return Ok(refuse(
                    p,
                    &invalid(format!("cannot read the payload from stdin: {e}; pipe JSON in")),
                ));
            }
            let payload = if text.trim().is_empty() {
                json!({})
            } else {
                match serde_json::from_str::<Value>(&text) {
                    Ok(v) => v,
                    Err(e) => {
                        return Ok(refuse(
                            p,
                            &invalid(format!(
                                "the payload on stdin is not JSON ({e}); pipe one JSON value, e.g. echo '{{\"id\":\"i-1\"}}' | hcpx sense emit {pack} {reference}"
                            )),
                        ))
                    }
                }
            };
            match runtime.sense_emit(&principal, pack, reference, payload) {
                Ok(event) => {
                    if p.json {
                        p.json_doc(&json!({ "ok": true, "event": event }));
                    } else {
                        p.message(&format!("recorded {pack} {reference} as event {}", event.id));
                    }
                    Ok(exit::OK)
                }
                Err(d) => Ok(refuse(p, &d)),
            }
        }
        SenseCmd::Watch { pack, after, follow } => {
            let pack = pack.as_deref();
            // The log's version before the read: an event recorded between the two is seen by the next poll.
            let mut seen = runtime.sense_version(&principal);
            let events = match runtime.sense_events(&principal, *after, pack) {
                Ok(e) => e,
                Err(d) => return Ok(refuse(p, &d)),
            };
            let mut last = events.last().map_or(*after, |e| e.id);
            if !follow {
                if p.json {
                    p.json_doc(&json!({ "ok": true, "events": events, "last_id": last }));
                } else {
                    events.iter().for_each(|e| show(p, e));
                }
                return Ok(exit::OK);
            }
            events.iter().for_each(|e| show(p, e));
            loop {
                std::thread::sleep(POLL);
                // The local grants as they are now: a grant taken back ends the watch with the denial.
                let principal = runtime.store().local_principal(Invoker::Cli)?;
                if let Err(d) = runtime.sense_may_watch(&principal, pack) {
                    return Ok(refuse(p, &d));
                }
                let now = runtime.sense_version(&principal);
                if now == seen {
                    continue;
                }
                seen = now;
                match runtime.sense_events(&principal, last, pack) {
                    Ok(new) => {
                        for e in &new {
                            show(p, e);
                            last = e.id;
                        }
                    }
                    // A grant revoked while watching ends the watch with the denial.
                    Err(d) => return Ok(refuse(p, &d)),
                }
            }
        }
    }
}

/// One event: a JSON line under `--json`, else `ID AT PACK REF PAYLOAD`.
fn show(p: &Printer, e: &SenseEvent) {
    if p.json {
        p.json_line(e);
    } else {
        p.data(&format!("{}  {}  {}  {}  {}", e.id, e.at, e.pack_id, e.reference, e.payload));
    }
}

fn invalid(message: String) -> Denial {
    Denial::new(hcpx_model::Code::InvalidArgs, message)
}

/// A denial: `{ok, code, error}` under `--json`, else the message on stderr; the code's exit status.
fn refuse(p: &Printer, d: &Denial) -> u8 {
    if p.json {
        p.json_doc(&json!({ "ok": false, "code": d.code, "error": d.message }));
    } else {
        p.error(&d.message);
    }
    d.code.status().exit
}

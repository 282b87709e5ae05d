//! The transit pack as a composite: the same commands and the same results as `packs/transit/bin/transit.mjs`.

wit_bindgen::generate!({ world: "composite", path: "../../wit/0.1.0" });

use serde_json::{json, Map, Value};

const STOPS: [&str; 6] = ["A", "B", "Central", "Central Park", "Harbour", "North Gate"];

struct Transit;

fn arg<'a>(args: &'a Map<String, Value>, name: &str) -> Result<&'a str, String> {
    args.get(name).and_then(Value::as_str).ok_or_else(|| format!("{name} is required"))
}

fn option_of(id: &str) -> Result<u32, String> {
    id.strip_prefix("opt-")
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("option id {id:?} is not like opt-1"))
}

impl Guest for Transit {
    fn exec(
        _ctx: hcp::adapter::types::CallContext,
        verb_key: String,
        args_json: String,
    ) -> Result<String, String> {
        let args: Map<String, Value> =
            serde_json::from_str(&args_json).map_err(|e| format!("args are not a JSON object: {e}"))?;
        let out = match verb_key.as_str() {
            "find" => {
                let q = arg(&args, "query")?;
                let lower = q.to_lowercase();
                let stops: Vec<&str> =
                    STOPS.iter().copied().filter(|s| s.to_lowercase().contains(&lower)).collect();
                json!({ "ok": true, "verb": "find", "query": q, "stops": stops })
            }
            "plan" => {
                json!({ "ok": true, "verb": "plan", "from": arg(&args, "from")?, "to": arg(&args, "to")?, "optionId": "opt-1" })
            }
            "show" => {
                let id = arg(&args, "option")?;
                let n = option_of(id)?;
                json!({ "ok": true, "verb": "show", "optionId": id,
                        "legs": [{ "line": format!("L{n}"), "depart": format!("08:0{}", n % 10), "arrive": format!("08:2{}", n % 10) }],
                        "price": "2.80", "currency": "EUR" })
            }
            "follow" => {
                let id = arg(&args, "option")?;
                let n = option_of(id)?;
                json!({ "ok": true, "verb": "follow", "optionId": id, "leg": 1, "line": format!("L{n}"), "delayMinutes": 0 })
            }
            "status" => json!({ "ok": true, "verb": "status", "lines": 4, "disruptions": [] }),
            other => {
                return Err(format!("unknown command {other}; commands: find, plan, show, follow, status"))
            }
        };
        Ok(out.to_string())
    }

    fn describe() -> Vec<String> {
        ["find", "plan", "show", "follow", "status"].iter().map(|s| s.to_string()).collect()
    }
}

export!(Transit);

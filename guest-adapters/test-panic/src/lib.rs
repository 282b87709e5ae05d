//! A guest that panics: the runtime must report `adapter_failed` and carry on.

wit_bindgen::generate!({ world: "composite", path: "../../wit/0.1.0" });

struct Panics;

impl Guest for Panics {
    fn exec(
        _ctx: hcp::adapter::types::CallContext,
        verb_key: String,
        _args: String,
    ) -> Result<String, String> {
        if verb_key == "ok" {
            return Ok("{\"ok\":true}".into());
        }
        panic!("the guest gave up on purpose");
    }

    fn describe() -> Vec<String> {
        vec!["run".into(), "ok".into()]
    }
}

export!(Panics);

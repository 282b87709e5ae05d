//! A guest that never returns: the runtime must stop it at the deadline.

wit_bindgen::generate!({ world: "composite", path: "../../wit" });

struct Looper;

impl Guest for Looper {
    fn exec(_ctx: hcp::adapter::types::CallContext, verb_key: String, _args: String) -> Result<String, String> {
        if verb_key == "ok" {
            return Ok("{\"ok\":true}".into());
        }
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }

    fn describe() -> Vec<String> {
        vec!["run".into(), "ok".into()]
    }
}

export!(Looper);

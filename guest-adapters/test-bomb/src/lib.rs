//! A guest that allocates without end: the runtime's memory cap must stop it cleanly.

wit_bindgen::generate!({ world: "composite", path: "../../wit" });

struct Bomb;

impl Guest for Bomb {
    fn exec(_ctx: hcp::adapter::types::CallContext, verb_key: String, _args: String) -> Result<String, String> {
        if verb_key == "ok" {
            return Ok("{\"ok\":true}".into());
        }
        let mut hoard: Vec<Vec<u8>> = Vec::new();
        loop {
            hoard.push(vec![7u8; 1 << 20]);
            std::hint::black_box(&hoard);
        }
    }

    fn describe() -> Vec<String> {
        vec!["run".into(), "ok".into()]
    }
}

export!(Bomb);

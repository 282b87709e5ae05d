//! A guest that allocates without end (`run`): the runtime's memory cap must stop it cleanly. `flood` and
//! `flood-err` answer 4 MiB of text as a result or an error: the runtime must cut it at `max_output_bytes`.

wit_bindgen::generate!({ world: "composite", path: "../../wit/0.1.0" });

struct Bomb;

impl Guest for Bomb {
    fn exec(
        _ctx: hcp::adapter::types::CallContext,
        verb_key: String,
        _args: String,
    ) -> Result<String, String> {
        if verb_key == "ok" {
            return Ok("{\"ok\":true}".into());
        }
        if verb_key == "flood" {
            return Ok("x".repeat(4 << 20));
        }
        if verb_key == "flood-err" {
            return Err("e".repeat(4 << 20));
        }
        let mut hoard: Vec<Vec<u8>> = Vec::new();
        loop {
            hoard.push(vec![7u8; 1 << 20]);
            std::hint::black_box(&hoard);
        }
    }

    fn describe() -> Vec<String> {
        vec!["run".into(), "ok".into(), "flood".into(), "flood-err".into()]
    }
}

export!(Bomb);

//! A guest that never returns: the runtime must stop it at the deadline, whether it spins (`run`) or blocks in a
//! WASI host call (`sleep`: an hour on the monotonic clock, where epoch interruption cannot reach it).

wit_bindgen::generate!({ world: "composite", path: "../../wit" });

struct Looper;

impl Guest for Looper {
    fn exec(_ctx: hcp::adapter::types::CallContext, verb_key: String, _args: String) -> Result<String, String> {
        if verb_key == "ok" {
            return Ok("{\"ok\":true}".into());
        }
        if verb_key == "sleep" {
            std::thread::sleep(std::time::Duration::from_secs(3600));
            return Ok("{\"slept\":true}".into());
        }
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }

    fn describe() -> Vec<String> {
        vec!["run".into(), "ok".into(), "sleep".into()]
    }
}

export!(Looper);

//! A guest that never returns: the runtime must stop it at the deadline, whether it spins (`run`) or blocks in a
//! WASI host call, where epoch interruption cannot reach it (`sleep`: an hour on the monotonic clock; `fifo`:
//! reading the FIFO `pipe` in its preopen, which no one writes).

wit_bindgen::generate!({ world: "composite", path: "../../wit/0.1.0" });

struct Looper;

impl Guest for Looper {
    fn exec(
        _ctx: hcp::adapter::types::CallContext,
        verb_key: String,
        _args: String,
    ) -> Result<String, String> {
        if verb_key == "ok" {
            return Ok("{\"ok\":true}".into());
        }
        if verb_key == "sleep" {
            std::thread::sleep(std::time::Duration::from_secs(3600));
            return Ok("{\"slept\":true}".into());
        }
        if verb_key == "fifo" {
            let got = std::fs::read("pipe").map(|b| b.len()).unwrap_or(0);
            return Ok(format!("{{\"read\":{got}}}"));
        }
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }

    fn describe() -> Vec<String> {
        vec!["run".into(), "ok".into(), "sleep".into(), "fifo".into()]
    }
}

export!(Looper);

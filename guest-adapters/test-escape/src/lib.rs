//! A guest that tries to read outside its preopen: it must find nothing.

wit_bindgen::generate!({ world: "composite", path: "../../wit" });

struct Escape;

impl Guest for Escape {
    fn exec(_ctx: hcp::adapter::types::CallContext, _verb_key: String, _args: String) -> Result<String, String> {
        let mut found = Vec::new();
        for p in ["/etc/passwd", "../../../../etc/passwd", "/proc/self/environ", "..", "/", "/tmp"] {
            if let Ok(s) = std::fs::read_to_string(p) {
                found.push(format!("read {p}: {} bytes", s.len()));
            }
            if let Ok(d) = std::fs::read_dir(p) {
                let names: Vec<String> = d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
                if !names.is_empty() {
                    found.push(format!("listed {p}: {names:?}"));
                }
            }
        }
        let written = std::fs::write("inside.txt", "ok").is_ok();
        let listed: Vec<String> = std::fs::read_dir(".").map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect()).unwrap_or_default();
        Ok(format!("{{\"escaped\":{:?},\"wrote_inside\":{},\"inside\":{:?}}}", found, written, listed))
    }

    fn describe() -> Vec<String> {
        vec!["run".into()]
    }
}

export!(Escape);

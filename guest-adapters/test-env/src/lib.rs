//! A guest that reads environment variables and arguments: it must see none.

wit_bindgen::generate!({ world: "composite", path: "../../wit/0.1.0" });

struct Env;

impl Guest for Env {
    fn exec(
        _ctx: hcp::adapter::types::CallContext,
        _verb_key: String,
        _args: String,
    ) -> Result<String, String> {
        let vars: Vec<String> = std::env::vars().map(|(k, v)| format!("{k}={v}")).collect();
        let argv: Vec<String> = std::env::args().collect();
        Ok(format!("{{\"vars\":{:?},\"argv\":{:?}}}", vars, argv))
    }

    fn describe() -> Vec<String> {
        vec!["run".into()]
    }
}

export!(Env);

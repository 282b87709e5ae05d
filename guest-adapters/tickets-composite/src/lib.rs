//! The tickets example as a composite (world `hcp:adapter@0.2.0`, packs/tickets-composite): the same commands as
//! the wrap pack packs/tickets, over `wasi:http` instead of curl. The API's address is the project's
//! `tickets.conf` (`api=https://HOST:PORT`); the credential is the Binding field `token`, which the host gives
//! as a placeholder: hcpx puts the real value into the `authorization` header of requests to the API only.

wit_bindgen::generate!({ world: "composite", path: "../../wit", generate_all });

use serde_json::{Map, Value};
use wasi::http::outgoing_handler;
use wasi::http::types::{Fields, Method, OutgoingBody, OutgoingRequest, Scheme};
use wasi::io::streams::StreamError;

struct Tickets;

/// The API's scheme, authority and path prefix, from `tickets.conf` in the project directory.
fn api() -> Result<(Scheme, String, String), String> {
    let conf = std::fs::read_to_string("tickets.conf")
        .map_err(|e| format!("cannot read tickets.conf in the project directory: {e}"))?;
    let url = conf
        .lines()
        .find_map(|l| l.strip_prefix("api="))
        .ok_or("no api= line in tickets.conf in the project directory")?
        .trim();
    let (scheme, rest) = url.split_once("://").ok_or_else(|| format!("api {url} has no scheme"))?;
    let scheme = match scheme {
        "https" => Scheme::Https,
        "http" => Scheme::Http,
        other => return Err(format!("api {url}: scheme {other} is not http or https")),
    };
    let (authority, prefix) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
        None => (rest, ""),
    };
    Ok((scheme, authority.to_string(), prefix.to_string()))
}

/// What the host's `credential` gives for `field` (a placeholder for a host-bound field).
fn credential(ctx: &hcp::adapter::types::CallContext, field: &str) -> Result<String, String> {
    let c = ctx.credentials.iter().find(|c| c.field == field).ok_or_else(|| {
        format!("the Binding for family tickets-composite has no `{field}`; store it with `hcpx credential set tickets-composite {field}` (the value is read from stdin)")
    })?;
    hcp::adapter::host::credential(c.handle).ok_or_else(|| format!("no value for credential {field}"))
}

/// One request to the API: its status and its body as JSON.
fn send(token: &str, method: Method, path: &str, body: &[u8]) -> Result<(u16, Value), String> {
    let (scheme, authority, prefix) = api()?;
    let fields = Fields::new();
    let bearer = format!("Bearer {token}");
    fields.append("authorization", bearer.as_bytes()).map_err(|e| format!("authorization: {e:?}"))?;
    if !body.is_empty() {
        fields.append("content-type", b"application/json").map_err(|e| format!("content-type: {e:?}"))?;
    }
    let request = OutgoingRequest::new(fields);
    request.set_method(&method).map_err(|()| "bad method".to_string())?;
    request.set_scheme(Some(&scheme)).map_err(|()| "bad scheme".to_string())?;
    request.set_authority(Some(&authority)).map_err(|()| format!("bad authority {authority}"))?;
    request.set_path_with_query(Some(&format!("{prefix}{path}"))).map_err(|()| "bad path".to_string())?;
    let out = request.body().map_err(|()| "no request body".to_string())?;
    let future =
        outgoing_handler::handle(request, None).map_err(|e| format!("the request was refused: {e:?}"))?;
    if !body.is_empty() {
        let stream = out.write().map_err(|()| "no request body stream".to_string())?;
        stream.blocking_write_and_flush(body).map_err(|e| format!("writing the body: {e:?}"))?;
        drop(stream);
    }
    OutgoingBody::finish(out, None).map_err(|e| format!("finishing the body: {e:?}"))?;
    future.subscribe().block();
    let response = match future.get() {
        Some(Ok(Ok(r))) => r,
        Some(Ok(Err(e))) => return Err(format!("the request failed: {e:?}")),
        Some(Err(())) | None => return Err("the response was already taken".to_string()),
    };
    let status = response.status();
    let incoming = response.consume().map_err(|()| "no response body".to_string())?;
    let stream = incoming.stream().map_err(|()| "no response stream".to_string())?;
    let mut got = Vec::new();
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => got.extend_from_slice(&chunk),
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(format!("reading the response: {}", e.to_debug_string()))
            }
        }
    }
    let text = String::from_utf8_lossy(&got).into_owned();
    let doc = serde_json::from_str(&text).map_err(|_| format!("the api answered {status} with {text}"))?;
    Ok((status, doc))
}

/// The API's answer, or an error holding its JSON (as the wrap's `curl --fail-with-body` prints it).
fn answer((status, doc): (u16, Value)) -> Result<Value, String> {
    if (200..300).contains(&status) {
        Ok(doc)
    } else {
        Err(doc.to_string())
    }
}

impl Guest for Tickets {
    fn exec(ctx: hcp::adapter::types::CallContext, verb_key: String, args: String) -> Result<String, String> {
        let args: Map<String, Value> =
            serde_json::from_str(&args).map_err(|e| format!("args are not a JSON object: {e}"))?;
        let token = credential(&ctx, "token")?;
        let out = match verb_key.as_str() {
            "list" => answer(send(&token, Method::Get, "/tickets", &[])?)?,
            "create" => {
                let file = args.get("file").and_then(Value::as_str).ok_or("file is required")?;
                let body = std::fs::read(file).map_err(|e| format!("cannot read {file}: {e}"))?;
                answer(send(&token, Method::Post, "/tickets", &body)?)?
            }
            other => return Err(format!("unknown command {other}")),
        };
        Ok(out.to_string())
    }

    fn describe() -> Vec<String> {
        vec!["list".into(), "create".into()]
    }
}

export!(Tickets);

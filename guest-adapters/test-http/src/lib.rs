//! A guest that sends HTTP requests through `wasi:http/outgoing-handler` (world `hcp:adapter@0.2.0`), for the
//! composite HTTP tests (tests/integration/composite_http.rs): `fetch` sends one request (and, with `follow`,
//! the one its redirect names), `repeat` sends the same GET `times` times. A refused request is an `err` naming
//! the `error-code` the host answered with. In the url, the headers and the body, `{cred:FIELD}` is replaced by
//! what the host's `credential` gives for that Binding field (composite_secrets.rs), and the result says what
//! that was (`credentials`), so a test sees what the guest held.

wit_bindgen::generate!({ world: "composite", path: "../../wit", generate_all });

use serde_json::{json, Map, Value};
use wasi::http::outgoing_handler;
use wasi::http::types::{ErrorCode, Fields, IncomingResponse, Method, OutgoingBody, OutgoingRequest, Scheme};
use wasi::io::streams::StreamError;

struct Http;

/// What a response was: its status, its `location` header, its body as text.
struct Got {
    status: u16,
    location: Option<String>,
    body: String,
}

fn code(e: &ErrorCode) -> String {
    format!("{e:?}")
}

fn method(name: &str) -> Method {
    match name {
        "GET" => Method::Get,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "HEAD" => Method::Head,
        "DELETE" => Method::Delete,
        other => Method::Other(other.to_string()),
    }
}

/// Splits `scheme://authority/path` without a URL crate.
fn split(url: &str) -> Result<(Scheme, String, String), String> {
    let (scheme, rest) = url.split_once("://").ok_or_else(|| format!("{url} has no scheme"))?;
    let scheme = match scheme {
        "https" => Scheme::Https,
        "http" => Scheme::Http,
        other => Scheme::Other(other.to_string()),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    Ok((scheme, authority.to_string(), path.to_string()))
}

fn send(verb: &str, url: &str, headers: &Map<String, Value>, body: &[u8]) -> Result<Got, String> {
    let (scheme, authority, path) = split(url)?;
    let fields = Fields::new();
    for (k, v) in headers {
        let v = v.as_str().unwrap_or_default().as_bytes().to_vec();
        fields.append(k, &v).map_err(|e| format!("header {k}: {e:?}"))?;
    }
    let request = OutgoingRequest::new(fields);
    request.set_method(&method(verb)).map_err(|()| "bad method".to_string())?;
    request.set_scheme(Some(&scheme)).map_err(|()| "bad scheme".to_string())?;
    request.set_authority(Some(&authority)).map_err(|()| "bad authority".to_string())?;
    request.set_path_with_query(Some(&path)).map_err(|()| "bad path".to_string())?;
    let out = request.body().map_err(|()| "no body".to_string())?;
    let future = outgoing_handler::handle(request, None).map_err(|e| code(&e))?;
    if !body.is_empty() {
        let stream = out.write().map_err(|()| "no body stream".to_string())?;
        for chunk in body.chunks(4096) {
            if stream.blocking_write_and_flush(chunk).is_err() {
                break;
            }
        }
        drop(stream);
    }
    let _ = OutgoingBody::finish(out, None);
    future.subscribe().block();
    let response: IncomingResponse = match future.get() {
        Some(Ok(Ok(r))) => r,
        Some(Ok(Err(e))) => return Err(code(&e)),
        Some(Err(())) | None => return Err("the response was already taken".to_string()),
    };
    let status = response.status();
    let location =
        response.headers().get("location").first().map(|v| String::from_utf8_lossy(v).into_owned());
    let incoming = response.consume().map_err(|()| "no response body".to_string())?;
    let stream = incoming.stream().map_err(|()| "no response stream".to_string())?;
    let mut got = Vec::new();
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => got.extend_from_slice(&chunk),
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(match wasi::http::types::http_error_code(&e) {
                    Some(c) => code(&c),
                    None => e.to_debug_string(),
                })
            }
        }
    }
    Ok(Got { status, location, body: String::from_utf8_lossy(&got).into_owned() })
}

/// The call's credentials as the guest holds them: each field and what `credential(handle)` gave.
fn credentials(ctx: &hcp::adapter::types::CallContext) -> Map<String, Value> {
    ctx.credentials
        .iter()
        .map(|c| {
            let v = hcp::adapter::host::credential(c.handle).unwrap_or_default();
            (c.field.clone(), Value::String(v))
        })
        .collect()
}

/// `text` with each `{cred:FIELD}` replaced by that field's credential.
fn fill(text: &str, creds: &Map<String, Value>) -> String {
    let mut out = text.to_string();
    for (field, value) in creds {
        out = out.replace(&format!("{{cred:{field}}}"), value.as_str().unwrap_or_default());
    }
    out
}

fn fetch(args: &Map<String, Value>, creds: &Map<String, Value>) -> Result<Value, String> {
    let url = &fill(args.get("url").and_then(Value::as_str).ok_or("url is required")?, creds);
    let verb = args.get("method").and_then(Value::as_str).unwrap_or("GET");
    let mut headers = args.get("headers").and_then(Value::as_object).cloned().unwrap_or_default();
    for v in headers.values_mut() {
        *v = Value::String(fill(v.as_str().unwrap_or_default(), creds));
    }
    let mut body = fill(args.get("body").and_then(Value::as_str).unwrap_or(""), creds).as_bytes().to_vec();
    if let Some(n) = args.get("body_bytes").and_then(Value::as_u64) {
        body = vec![b'x'; n as usize];
    }
    let got = send(verb, url, &headers, &body)?;
    let follow = args.get("follow").and_then(Value::as_bool).unwrap_or(false);
    if follow && (300..400).contains(&got.status) {
        let next = got.location.ok_or("a redirect without location")?;
        let then = send("GET", &next, &Map::new(), &[]).map_err(|e| format!("redirect to {next}: {e}"))?;
        return Ok(json!({ "status": then.status, "body": then.body, "redirected_from": url }));
    }
    if !creds.is_empty() {
        return Ok(json!({ "status": got.status, "body": got.body, "credentials": creds }));
    }
    Ok(json!({ "status": got.status, "body": got.body }))
}

fn repeat(args: &Map<String, Value>) -> Result<Value, String> {
    let url = args.get("url").and_then(Value::as_str).ok_or("url is required")?;
    let times = args.get("times").and_then(Value::as_u64).unwrap_or(1);
    for i in 0..times {
        send("GET", url, &Map::new(), &[]).map_err(|e| format!("request {}: {e}", i + 1))?;
    }
    Ok(json!({ "sent": times }))
}

impl Guest for Http {
    fn exec(ctx: hcp::adapter::types::CallContext, verb_key: String, args: String) -> Result<String, String> {
        let args: Map<String, Value> =
            serde_json::from_str(&args).map_err(|e| format!("args are not a JSON object: {e}"))?;
        let out = match verb_key.as_str() {
            "fetch" => fetch(&args, &credentials(&ctx))?,
            "repeat" => repeat(&args)?,
            other => return Err(format!("unknown command {other}")),
        };
        Ok(out.to_string())
    }

    fn describe() -> Vec<String> {
        vec!["fetch".into(), "repeat".into()]
    }
}

export!(Http);

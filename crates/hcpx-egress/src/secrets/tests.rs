//! `Secrets` on heads and bodies: the value goes where the rule says, a placeholder anywhere else refuses.

use super::*;

/// A request to check: host, port, target, headers.
type Case<'a> = (&'a str, u16, String, Vec<(&'a str, &'a str)>);

const TOKEN: &str = "real-token-value";

fn secrets() -> (Secrets, String, String) {
    let (tok, key) = (placeholder().unwrap(), placeholder().unwrap());
    let s = Secrets::new(vec![
        Secret {
            field: "token".into(),
            placeholder: tok.clone(),
            value: TOKEN.into(),
            rule: "https://api.test".parse().unwrap(),
            slot: Slot::Header("authorization".into()),
        },
        Secret {
            field: "key".into(),
            placeholder: key.clone(),
            value: "k y&z".into(),
            rule: "https://*.maps.test:8443".parse().unwrap(),
            slot: Slot::Query("api_key".into()),
        },
    ]);
    (s, tok, key)
}

fn head(
    s: &Secrets,
    host: &str,
    port: u16,
    target: &str,
    headers: &[(&str, &str)],
) -> Result<(String, Vec<(String, String)>), Refusal> {
    let mut t = target.to_string();
    let mut h: Vec<(String, Vec<u8>)> =
        headers.iter().map(|(k, v)| (k.to_string(), v.as_bytes().to_vec())).collect();
    s.apply_head(Scheme::Https, host, port, &mut t, &mut h)?;
    Ok((t, h.into_iter().map(|(k, v)| (k, String::from_utf8(v).unwrap())).collect()))
}

#[test]
fn placeholders_are_random_and_shaped() {
    let (a, b) = (placeholder().unwrap(), placeholder().unwrap());
    assert_ne!(a, b);
    assert!(a.starts_with(PLACEHOLDER_PREFIX) && a.len() == PLACEHOLDER_PREFIX.len() + 32, "{a}");
    assert!(a[PLACEHOLDER_PREFIX.len()..].bytes().all(|c| c.is_ascii_hexdigit()));
}

#[test]
fn the_value_goes_into_the_declared_header_of_the_declared_host_only() {
    let (s, tok, _) = secrets();
    let (t, h) = head(
        &s,
        "API.test.",
        443,
        "/v1/me?x=1",
        &[("Authorization", &format!("Bearer {tok}")), ("Accept", "*/*")],
    )
    .unwrap();
    assert_eq!(t, "/v1/me?x=1");
    assert_eq!(h[0], ("Authorization".to_string(), format!("Bearer {TOKEN}")));
    assert_eq!(h[1].1, "*/*");
    // Upper-cased by a client, still the same placeholder.
    let (_, h) = head(&s, "api.test", 443, "/", &[("authorization", &tok.to_ascii_uppercase())]).unwrap();
    assert_eq!(h[0].1, TOKEN);
}

#[test]
fn a_placeholder_anywhere_else_is_refused_naming_the_field_not_the_value() {
    let (s, tok, key) = secrets();
    let auth = format!("Bearer {tok}");
    let cases: Vec<Case> = vec![
        // Another host, another port, another header, the path, another query parameter, percent-encoded.
        ("evil.test", 443, "/".into(), vec![("Authorization", auth.as_str())]),
        ("api.test", 8443, "/".into(), vec![("Authorization", auth.as_str())]),
        ("api.test", 443, "/".into(), vec![("X-Leak", auth.as_str())]),
        ("api.test", 443, format!("/leak/{tok}"), vec![]),
        ("api.test", 443, format!("/?q={tok}"), vec![]),
        ("api.test", 443, format!("/?q={}", tok.replace('-', "%2D")), vec![]),
        ("api.test", 443, format!("/?{tok}=1"), vec![]),
        // The query parameter's placeholder in a header, and to a name two labels below its wildcard.
        ("api.test", 443, "/".into(), vec![("Authorization", key.as_str())]),
        ("a.b.maps.test", 8443, format!("/?api_key={key}"), vec![]),
        ("a.maps.test", 8443, "/".into(), vec![("Cookie", key.as_str())]),
    ];
    for (host, port, target, headers) in cases {
        let r = head(&s, host, port, &target, &headers).unwrap_err();
        assert_eq!(r.kind, RefusalKind::Placeholder, "{host} {target} {headers:?}");
        assert!(r.reason.contains("binding field"), "{r}");
        assert!(!r.reason.contains(TOKEN) && !r.reason.contains("k y"), "{r}");
    }
}

#[test]
fn the_value_goes_into_the_declared_query_parameter_percent_encoded() {
    let (s, _, key) = secrets();
    let (t, _) = head(&s, "eu.maps.test", 8443, &format!("/geo?q=x&api_key={key}"), &[]).unwrap();
    assert_eq!(t, "/geo?q=x&api_key=k%20y%26z");
    // Not for the header slot of another field, nor on the other scheme.
    let mut t = format!("/?api_key={key}");
    let r = s.apply_head(Scheme::Http, "eu.maps.test", 8443, &mut t, &mut []).unwrap_err();
    assert_eq!(r.kind, RefusalKind::Placeholder);
}

#[test]
fn requests_without_a_placeholder_pass_unchanged() {
    let (s, _, _) = secrets();
    let (t, h) = head(&s, "evil.test", 443, "/a?b=c", &[("Authorization", "Bearer mine")]).unwrap();
    assert_eq!((t.as_str(), h[0].1.as_str()), ("/a?b=c", "Bearer mine"));
}

#[test]
fn parts_are_rewritten_for_a_send_hook() {
    let (s, tok, _) = secrets();
    let req = http::Request::builder()
        .uri("https://api.test/v1")
        .header("authorization", format!("Bearer {tok}"))
        .body(())
        .unwrap();
    let (mut parts, ()) = req.into_parts();
    assert_eq!(s.apply(Scheme::Https, "api.test", 443, &mut parts).unwrap(), 1);
    assert_eq!(parts.headers["authorization"], format!("Bearer {TOKEN}").as_str());
    assert_eq!(parts.uri.to_string(), "https://api.test/v1");
    let req = http::Request::builder()
        .uri("https://evil.test/")
        .header("authorization", tok.as_str())
        .body(())
        .unwrap();
    let (mut parts, ()) = req.into_parts();
    assert_eq!(
        s.apply(Scheme::Https, "evil.test", 443, &mut parts).unwrap_err().kind,
        RefusalKind::Placeholder
    );
    let req = http::Request::builder().method(tok.as_str()).uri("https://api.test/").body(()).unwrap();
    let (mut parts, ()) = req.into_parts();
    let r = s.apply(Scheme::Https, "api.test", 443, &mut parts).unwrap_err();
    assert!(r.reason.contains("the method"), "{r}");
}

#[test]
fn a_placeholder_in_a_body_is_found_even_split_across_chunks() {
    let (s, tok, _) = secrets();
    let mut scan = s.body_scan();
    let body = format!("{{\"token\": \"{tok}\"}}");
    let (a, b) = body.as_bytes().split_at(20);
    scan.chunk(a, "api.test", 443).unwrap();
    let r = scan.chunk(b, "api.test", 443).unwrap_err();
    assert_eq!(r.kind, RefusalKind::Placeholder);
    assert!(r.reason.contains("field token") && r.reason.contains("body"), "{r}");
    let mut clean = s.body_scan();
    for chunk in [&b"hcpx-ph-"[..], b"not one", b"x"] {
        clean.chunk(chunk, "api.test", 443).unwrap();
    }
}

#[test]
fn a_line_break_in_a_value_never_reaches_a_header() {
    let tok = placeholder().unwrap();
    let s = Secrets::new(vec![Secret {
        field: "token".into(),
        placeholder: tok.clone(),
        value: "a\r\nX-Evil: 1".into(),
        rule: "https://api.test".parse().unwrap(),
        slot: Slot::Header("authorization".into()),
    }]);
    let r = head(&s, "api.test", 443, "/", &[("authorization", &tok)]).unwrap_err();
    assert!(r.reason.contains("line break"), "{r}");
    assert!(!format!("{s:?}").contains("X-Evil"));
}

#[test]
fn a_response_holding_a_value_is_cut_before_any_of_its_bytes() {
    let (s, _, _) = secrets();
    let mut g = s.echo_guard();
    let mut out = g.pass(b"hello real-tok", "api.test", 443).unwrap();
    // What could start a value is held back, not sent.
    assert!(!String::from_utf8_lossy(&out).contains("real"), "{out:?}");
    let r = g.pass(b"en-value and more", "api.test", 443).unwrap_err();
    assert_eq!(r.kind, RefusalKind::CredentialEcho);
    assert!(r.reason.contains("binding field token") && !r.reason.contains(TOKEN), "{r}");
    // A clean body comes through whole, the held tail at its end.
    let mut g = s.echo_guard();
    out = g.pass(b"nothing secret here", "api.test", 443).unwrap();
    out.extend(g.pass(b", still nothing", "api.test", 443).unwrap());
    out.extend(g.finish());
    assert_eq!(out, b"nothing secret here, still nothing");
    let mut headers = http::HeaderMap::new();
    headers.insert("x-echo", format!("Bearer {TOKEN}").parse().unwrap());
    assert_eq!(g.headers(&headers, "api.test", 443).unwrap_err().kind, RefusalKind::CredentialEcho);
}

//! The loopback servers of the egress tests (tests/integration/egress.rs, composite_http.rs): a plain HTTP server
//! and an HTTPS server whose certificate (for `api.test` and `other.test`) a test CA made at test time, both on
//! 127.0.0.1 in this process, counting the connections that reached them.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The size of the HTTPS server's `GET /big` answer: more than a composite may read of one response (4 MiB).
pub(crate) const BIG: usize = 5 << 20;

/// The two servers and what reached them. The HTTPS one answers `GET /` with `hello over tls`, `GET /redirect`
/// with a 302 to `https://other.test:PORT/`, `GET /big` with `BIG` bytes and `GET /slow` after 3 s; it reads a
/// `POST /sink` and never answers; nothing else.
pub(crate) struct Servers {
    pub(crate) tls: u16,
    pub(crate) web: u16,
    pub(crate) tls_hits: Arc<AtomicUsize>,
    pub(crate) web_hits: Arc<AtomicUsize>,
    pub(crate) ca_pem: String,
}

/// Reads up to the end of an HTTP head (or EOF, or a few seconds).
fn read_head(s: &mut impl Read) -> String {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => buf.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

fn answer(s: &mut impl Write, body: &str) {
    let _ = write!(s, "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
    let _ = s.flush();
}

/// Serves every connection of `l` on its own thread with `serve`, counting them in `hits`.
fn serve_each(l: TcpListener, hits: Arc<AtomicUsize>, serve: impl Fn(TcpStream) + Send + Sync + 'static) {
    let serve = Arc::new(serve);
    std::thread::spawn(move || {
        for conn in l.incoming().flatten() {
            hits.fetch_add(1, Ordering::SeqCst);
            let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
            let serve = serve.clone();
            std::thread::spawn(move || serve(conn));
        }
    });
}

pub(crate) fn servers() -> Servers {
    let ca = crate::test_ca::test_ca("hcpx egress test ca");
    let config = ca.server(&["api.test", "other.test"], true);
    let tls = TcpListener::bind("127.0.0.1:0").unwrap();
    let web = TcpListener::bind("127.0.0.1:0").unwrap();
    let s = Servers {
        tls: tls.local_addr().unwrap().port(),
        web: web.local_addr().unwrap().port(),
        tls_hits: Arc::new(AtomicUsize::new(0)),
        web_hits: Arc::new(AtomicUsize::new(0)),
        ca_pem: ca.pem.clone(),
    };
    let port = s.tls;
    serve_each(tls, s.tls_hits.clone(), move |tcp| {
        let Ok(conn) = rustls::ServerConnection::new(config.clone()) else { return };
        let mut stream = rustls::StreamOwned::new(conn, tcp);
        let head = read_head(&mut stream);
        if head.starts_with("GET / ") {
            answer(&mut stream, "hello over tls");
        } else if head.starts_with("GET /redirect ") {
            // To a name the certificate covers, which a test's command is not allowed to reach.
            let _ = write!(
                stream,
                "HTTP/1.1 302 Found\r\nLocation: https://other.test:{port}/\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
        } else if head.starts_with("GET /slow ") {
            // Answers after 3 s: past a test's short call deadline.
            std::thread::sleep(Duration::from_secs(3));
            answer(&mut stream, "late");
        } else if head.starts_with("POST /sink ") {
            // Reads what is sent (until the client stops, or 5 s) and never answers.
            let mut sink = [0u8; 64 * 1024];
            while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
            return;
        } else if head.starts_with("GET /big ") {
            let _ = write!(stream, "HTTP/1.1 200 OK\r\nContent-Length: {BIG}\r\nConnection: close\r\n\r\n");
            let chunk = vec![b'x'; 64 * 1024];
            for _ in 0..BIG / chunk.len() {
                if stream.write_all(&chunk).is_err() {
                    return;
                }
            }
        } else {
            return;
        }
        stream.conn.send_close_notify();
        let _ = stream.flush();
    });
    serve_each(web, s.web_hits.clone(), |mut tcp| {
        let head = read_head(&mut tcp);
        let host = head.lines().find_map(|l| l.strip_prefix("Host: ")).unwrap_or("").to_string();
        answer(&mut tcp, &format!("hello plain, host {host}"));
    });
    s
}

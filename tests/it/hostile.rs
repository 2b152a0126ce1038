//! Servers that answer what no honest one would: a tiny HTTP listener each test starts on
//! 127.0.0.1 says exactly the hostile thing, and floe must keep it inert and contained.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A listener on 127.0.0.1 answering each request with what `answer(request line, port)`
/// returns (a whole raw HTTP response). Returns the port and a request counter.
fn fake_http(
    answer: impl Fn(&str, u16) -> Vec<u8> + Send + Sync + 'static,
) -> (u16, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let answer = Arc::new(answer);
    std::thread::spawn(move || {
        for stream in l.incoming() {
            let Ok(stream) = stream else { continue };
            let answer = answer.clone();
            let c = c.clone();
            std::thread::spawn(move || serve(stream, &*answer, port, &c));
        }
    });
    (port, count)
}

fn serve(stream: TcpStream, answer: &dyn Fn(&str, u16) -> Vec<u8>, port: u16, count: &AtomicUsize) {
    let mut r = BufReader::new(stream.try_clone().unwrap());
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut len = 0usize;
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            if h == "\r\n" || h == "\n" {
                break;
            }
            if let Some((k, v)) = h.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; len];
        let _ = r.read_exact(&mut body);
        count.fetch_add(1, Ordering::SeqCst);
        let mut w = &stream;
        if w.write_all(&answer(line.trim_end(), port)).is_err() {
            return;
        }
    }
}

fn response(status: &str, headers: &[(&str, String)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\ncontent-length: {}\r\n", body.len());
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

fn floe(args: &[&str], home: &std::path::Path) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_floe"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("USER", "floe")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

fn home(name: &str) -> std::path::PathBuf {
    let h = std::env::temp_dir().join(format!("floe-hostile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&h);
    std::fs::create_dir_all(&h).unwrap();
    h
}

/// Bytes a terminal acts on: ESC (OSC 52 writes the clipboard), BEL, CSI, bidi controls.
fn assert_inert(what: &str, text: &str) {
    for c in ['\u{1b}', '\u{7}', '\u{9b}', '\u{202e}', '\u{2066}'] {
        assert!(!text.contains(c), "{what} carries {c:?}: {text:?}");
    }
}

#[test]
fn floe_login_prints_a_hostile_token_server_answer_inert() {
    let (port, _) = fake_http(|line, port| {
        let base = format!("http://127.0.0.1:{port}");
        if line.contains("/oauth2/token/") {
            response(
                "500 Internal Server Error",
                &[("content-type", "text/plain".into())],
                "\u{1b}]52;c;ZWNobyBwd25lZA==\u{7}token server exploded \u{202e}txt.exe".as_bytes(),
            )
        } else {
            response(
                "401 Unauthorized",
                &[(
                    "www-authenticate",
                    format!(
                        "Bearer x_redirect_server=\"{base}/oauth2/authorize/f1\", x_token_server=\"{base}/oauth2/token/f1\""
                    ),
                )],
                b"",
            )
        }
    });
    let h = home("login");
    let url = format!("http://127.0.0.1:{port}");
    let out = floe(
        &[
            "login", "--trino", &url, "--user", "carol", "--auth", "oauth2",
        ],
        &h,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("token server exploded"),
        "the reason is shown: {err}"
    );
    assert_inert("floe login's stderr", &err);
    assert_inert("floe login's stdout", &String::from_utf8_lossy(&out.stdout));
}

/// `openssl s_server -WWW` serving `dir` over TLS with `cert`/`key` on `port`: killed (by
/// its own pid) when dropped.
struct TlsServer(std::process::Child);

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A self-signed certificate for localhost and 127.0.0.1 in `dir` (cert.pem, key.pem),
/// made the usual quick way: `openssl req -x509`, which marks it CA:TRUE.
fn self_signed(dir: &std::path::Path) {
    let made = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "key.pem",
            "-out",
            "cert.pem",
            "-days",
            "2",
            "-subj",
            "/CN=trino.lab",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let text = std::process::Command::new("openssl")
        .args(["x509", "-in", "cert.pem", "-noout", "-text"])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("CA:TRUE"),
        "the certificate is CA:TRUE"
    );
}

fn tls_server(dir: &std::path::Path, port: u16) -> TlsServer {
    let child = std::process::Command::new("openssl")
        .args(["s_server", "-quiet", "-WWW", "-accept"])
        .arg(port.to_string())
        .args(["-cert", "cert.pem", "-key", "key.pem"])
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("openssl s_server");
    let started = std::time::Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "openssl s_server did not listen"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    TlsServer(child)
}

#[tokio::test]
async fn a_self_signed_ca_true_certificate_in_the_ca_file_is_pinned_and_still_checked() {
    let dir = home("selfsigned");
    self_signed(&dir);
    std::fs::create_dir_all(dir.join("v1")).unwrap();
    std::fs::write(
        dir.join("v1/info"),
        r#"{"nodeVersion":{"version":"476"},"environment":"lab","coordinator":true,"starting":false,"uptime":"1.00m"}"#,
    )
    .unwrap();
    let port = free_port();
    let _server = tls_server(&dir, port);
    // The server is this test's own: no lab needed.
    let client = |url: &str| {
        floe::trino::Client::new(floe::trino::ClientConfig {
            url: url.parse().unwrap(),
            user: "floe".into(),
            source: "floe-test".into(),
            catalog: Some("iceberg".into()),
            schema: None,
            auth: floe::config::Auth::None,
            tls: floe::config::TlsSettings {
                ca_file: Some(dir.join("cert.pem")),
                insecure_skip_verify: false,
            },
            session: Default::default(),
            client_tags: vec![],
            retry: floe::trino::RetryPolicy {
                max_retry_time: std::time::Duration::from_secs(2),
                ..Default::default()
            },
            request_timeout: std::time::Duration::from_secs(10),
            connect_timeout: std::time::Duration::from_secs(5),
            query_timeout: Some(std::time::Duration::from_secs(10)),
        })
        .unwrap()
    };
    // By the name and the address it lists: accepted, as curl --cacert does.
    for host in ["127.0.0.1", "localhost"] {
        let info = client(&format!("https://{host}:{port}"))
            .info()
            .await
            .unwrap_or_else(|e| panic!("{host}: {e}"));
        assert_eq!(info.node_version.version, "476");
    }
    // Pinned, not blindly trusted: another name is refused, in words.
    let e = client(&format!("https://127.0.0.2:{port}"))
        .info()
        .await
        .unwrap_err();
    let m = e.to_string();
    assert!(m.contains("does not name the host in the URL"), "{m}");
}

/// A TLS server that reads one request and closes the connection without a TLS
/// close_notify (Python's `close()` of an SSL socket does not send one): what a crashing
/// server or a proxy that drops the line does after the write was received.
const CLOSE_WITHOUT_NOTIFY: &str = r#"
import socket, ssl, sys
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain("cert.pem", "key.pem")
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", int(sys.argv[1])))
srv.listen(4)
print("listening", flush=True)
while True:
    raw, _ = srv.accept()
    try:
        conn = ctx.wrap_socket(raw, server_side=True)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
        print("received", data.split(b" ", 1)[0].decode(), flush=True)
        conn.close()
    except Exception as e:
        print("error", e, flush=True)
        raw.close()
"#;

#[tokio::test]
async fn a_write_whose_tls_connection_closes_without_close_notify_may_have_run() {
    let dir = home("close-notify");
    self_signed(&dir);
    let port = free_port();
    let mut server = std::process::Command::new("python3")
        .args(["-c", CLOSE_WITHOUT_NOTIFY, &port.to_string()])
        .current_dir(&dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("python3");
    let mut out = BufReader::new(server.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "listening");
    let tls = floe::config::TlsSettings {
        ca_file: Some(dir.join("cert.pem")),
        insecure_skip_verify: false,
    };
    let http = floe::net::http_client(
        &tls,
        std::time::Duration::from_secs(5),
        std::time::Duration::from_secs(10),
    )
    .unwrap();
    let e = http
        .post(format!(
            "https://127.0.0.1:{port}/api/v2/dags/rotate_tls_certificates/dagRuns"
        ))
        .header("content-type", "application/json")
        .body(r#"{"logical_date":null}"#)
        .send()
        .await
        .unwrap_err();
    line.clear();
    out.read_line(&mut line).unwrap();
    let _ = server.kill();
    let _ = server.wait();
    // The server had the whole request: the write may have been acted on.
    assert_eq!(line.trim(), "received POST", "the server's word");
    let chain = floe::net::error_chain(&e);
    assert!(!e.is_connect(), "{chain}");
    assert_eq!(
        floe::net::transport_kind(&e),
        floe::net::Transport::Transient,
        "a connection closed after the request was sent is not 'cannot reach': {chain}"
    );
}

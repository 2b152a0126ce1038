//! Servers that answer what no honest one would: a tiny HTTP listener each test starts on
//! 127.0.0.1 says exactly the hostile thing, and floe must keep it inert and contained.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One request as the fake server saw it: its request line and headers.
#[derive(Debug, Clone)]
pub struct Seen {
    pub line: String,
}

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

//! `floe serve`'s HTTP/1.1 listener: `/metrics`, `/healthz` and an index, optionally over
//! TLS and behind a bearer token. A request reads nothing but what the clusters last
//! published; connections are bounded in number and in how long their headers may take.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use super::ServeArgs;
use super::exporter::State;

/// Connections served at once; more wait to be accepted.
const MAX_CONNECTIONS: usize = 64;
/// How long a client may take to send its request's headers, or its TLS handshake.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// What a request must get past: TLS (when configured) and the bearer token (when set).
pub struct Guard {
    pub tls: Option<TlsAcceptor>,
    token: Option<String>,
}

impl Guard {
    /// The TLS files and the token `args` name (read now: at the start and on SIGHUP).
    pub fn load(args: &ServeArgs) -> Result<Guard, String> {
        let tls = match (&args.tls_cert, &args.tls_key) {
            (Some(cert), Some(key)) => Some(acceptor(cert, key)?),
            _ => None,
        };
        let token = match &args.token_file {
            Some(path) => Some(token_file(path)?),
            None => std::env::var(super::TOKEN_ENV)
                .ok()
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty()),
        };
        Ok(Guard { tls, token })
    }

    /// Whether `header` (the request's `Authorization`) carries the token (always, when
    /// none is set). Compared in constant time.
    fn admits(&self, header: Option<&HeaderValue>) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        let sent = header
            .and_then(|h| h.to_str().ok())
            .and_then(|h| {
                h.strip_prefix("Bearer ")
                    .or_else(|| h.strip_prefix("bearer "))
            })
            .unwrap_or("")
            .trim();
        sent.len() == token.len()
            && sent
                .bytes()
                .zip(token.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    }
}

/// The first line of `path`: the token.
fn token_file(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the token file {}: {e}", path.display()))?;
    let token = text.lines().next().unwrap_or("").trim().to_string();
    if token.is_empty() {
        return Err(format!("the token file {} is empty", path.display()));
    }
    Ok(token)
}

/// A TLS acceptor serving the certificate chain of `cert` with the key of `key`.
fn acceptor(cert: &PathBuf, key: &PathBuf) -> Result<TlsAcceptor, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<_, _>>())
        .map_err(|e| format!("cannot read the certificates of {}: {e}", cert.display()))?;
    if chain.is_empty() {
        return Err(format!("{} holds no certificate", cert.display()));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("cannot read the private key of {}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(chain, key))
        .map_err(|e| format!("cannot serve TLS with {} and its key: {e}", cert.display()))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Accept connections on `listener` until `stop` is told; each served on a task of its
/// own (at most [`MAX_CONNECTIONS`] at once).
pub async fn serve(
    listener: TcpListener,
    state: Arc<State>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let permits = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => p.expect("the semaphore is never closed"),
            _ = stop.changed() => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of descriptors, a connection reset before accept: not fatal.
                    tracing::warn!("floe serve: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = stop.changed() => break,
        };
        let state = state.clone();
        connections.spawn(async move {
            connection(stream, peer, state).await;
            drop(permit);
        });
        // Reap the finished ones so the set stays as small as the open connections.
        while connections.try_join_next().is_some() {}
    }
    connections.shutdown().await;
}

/// One connection: TLS when configured, then HTTP/1.1 until the client closes it.
async fn connection(stream: tokio::net::TcpStream, peer: SocketAddr, state: Arc<State>) {
    let tls = state.guard().tls.clone();
    let service = hyper::service::service_fn(move |req| {
        let state = state.clone();
        async move { Ok::<_, Infallible>(route(&state, req)) }
    });
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT);
    let served = match tls {
        Some(acceptor) => {
            match tokio::time::timeout(HEADER_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => http.serve_connection(TokioIo::new(tls), service).await,
                Ok(Err(e)) => {
                    tracing::debug!(%peer, "TLS handshake failed: {e}");
                    return;
                }
                Err(_) => return,
            }
        }
        None => http.serve_connection(TokioIo::new(stream), service).await,
    };
    if let Err(e) = served {
        tracing::debug!(%peer, "connection ended: {e}");
    }
}

/// The answer to one request.
fn route(state: &State, req: Request<hyper::body::Incoming>) -> Response<Full<Bytes>> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n".into());
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let head = req.method() == Method::HEAD;
    let mut response = match req.uri().path() {
        "/metrics" => metrics(state, &req),
        "/healthz" => plain(StatusCode::OK, state.health()),
        "/" => plain(
            StatusCode::OK,
            "floe serve: /metrics (Prometheus text or OpenMetrics), /healthz\n".into(),
        ),
        _ => plain(StatusCode::NOT_FOUND, "not found: try /metrics\n".into()),
    };
    if head {
        *response.body_mut() = Full::new(Bytes::new());
    }
    response
}

/// `/metrics`: the token checked, the format negotiated, the clusters' last refreshes.
fn metrics(state: &State, req: &Request<hyper::body::Incoming>) -> Response<Full<Bytes>> {
    if !state
        .guard()
        .admits(req.headers().get(header::AUTHORIZATION))
    {
        let mut r = plain(
            StatusCode::UNAUTHORIZED,
            "a bearer token is required\n".into(),
        );
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"floe\""),
        );
        return r;
    }
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|h| h.to_str().ok());
    let format = super::negotiate(accept);
    let body = state.exposition(format);
    let mut r = Response::new(Full::new(Bytes::from(body)));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    r
}

fn plain(status: StatusCode, text: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(text)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

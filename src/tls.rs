//! TLS with a CA file: the certificates of the file are the trust roots, and a server
//! certificate that is itself in the file is pinned. `openssl req -x509` — the usual quick
//! way to make a coordinator's certificate — marks it CA:TRUE, which webpki refuses as an
//! end entity (`CaUsedAsEndEntity`) while `curl --cacert` accepts it; a pinned certificate
//! is still checked for its validity period and for the name in the URL. And a certificate
//! failure is said in words an operator can act on.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};

/// How a client checks a server's certificate: a CA file's roots (and pins), or none at
/// all (`insecure_skip_verify`). Read from a profile's `[trino.tls]` / `[airflow.tls]`.
#[derive(Clone, Debug)]
pub struct TlsSettings {
    pub ca_file: Option<PathBuf>,
    pub insecure_skip_verify: bool,
}

/// Why a CA file cannot be the trust of a client.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read CA file {}: {reason}", file.display())]
    Read { file: PathBuf, reason: String },
    #[error("CA file {} holds no usable PEM certificate: {reason}", file.display())]
    Pem { file: PathBuf, reason: String },
    #[error("CA file {} holds no PEM certificate", file.display())]
    NoCertificate { file: PathBuf },
    #[error("CA file {} holds no certificate usable as a trust root", file.display())]
    NoRoot { file: PathBuf },
    #[error("CA file {}: {reason}", file.display())]
    Verifier { file: PathBuf, reason: String },
    #[error("TLS setup: {0}")]
    Setup(String),
}

/// The rustls configuration of a client trusting `ca_file` (see the module).
pub fn client_config(ca_file: &Path) -> Result<rustls::ClientConfig, TlsError> {
    let file = || ca_file.to_path_buf();
    let pem = std::fs::read(ca_file).map_err(|e| TlsError::Read {
        file: file(),
        reason: e.to_string(),
    })?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<_, _>>()
        .map_err(|e| TlsError::Pem {
            file: file(),
            reason: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate { file: file() });
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(certs.iter().cloned());
    if added == 0 {
        return Err(TlsError::NoRoot { file: file() });
    }
    let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| TlsError::Verifier {
            file: file(),
            reason: e.to_string(),
        })?;
    let verifier = Pinning {
        inner,
        pinned: certs,
    };
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Setup(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth())
}

/// The CA file's roots, and its certificates as pins.
#[derive(Debug)]
struct Pinning {
    inner: Arc<WebPkiServerVerifier>,
    pinned: Vec<CertificateDer<'static>>,
}

impl ServerCertVerifier for Pinning {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Ok(v) => Ok(v),
            Err(e) => {
                if !self
                    .pinned
                    .iter()
                    .any(|c| c.as_ref() == end_entity.as_ref())
                {
                    return Err(e);
                }
                // The very certificate the operator put in the CA file: trusted as such,
                // still only within its validity period and for the names it lists.
                check_pinned(end_entity, server_name, now)?;
                Ok(ServerCertVerified::assertion())
            }
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

fn check_pinned(
    cert: &CertificateDer<'_>,
    server_name: &ServerName<'_>,
    now: UnixTime,
) -> Result<(), rustls::Error> {
    let bad = |e: CertificateError| rustls::Error::InvalidCertificate(e);
    let (not_before, not_after) =
        validity(cert.as_ref()).ok_or(bad(CertificateError::BadEncoding))?;
    let now = now.as_secs() as i64;
    if now < not_before {
        return Err(bad(CertificateError::NotValidYet));
    }
    if now > not_after {
        return Err(bad(CertificateError::Expired));
    }
    let ee =
        webpki::EndEntityCert::try_from(cert).map_err(|_| bad(CertificateError::BadEncoding))?;
    ee.verify_is_valid_for_subject_name(server_name)
        .map_err(|_| bad(CertificateError::NotValidForName))
}

/// One DER element at the start of `b`: its tag, its contents, and what follows it.
fn tlv(b: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = b.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n].iter().fold(0usize, |a, &x| (a << 8) | x as usize);
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// The notBefore and notAfter of an X.509 certificate (RFC 5280 §4.1), as Unix seconds.
fn validity(der: &[u8]) -> Option<(i64, i64)> {
    let (_, cert, _) = tlv(der)?;
    let (_, mut tbs, _) = tlv(cert)?;
    // [0] version (optional), serialNumber, signature, issuer, then validity.
    if tbs.first() == Some(&0xa0) {
        tbs = tlv(tbs)?.2;
    }
    for _ in 0..3 {
        tbs = tlv(tbs)?.2;
    }
    let (_, validity, _) = tlv(tbs)?;
    let (t1, a, rest) = tlv(validity)?;
    let (t2, b, _) = tlv(rest)?;
    Some((der_time(t1, a)?, der_time(t2, b)?))
}

/// UTCTime (`YYMMDDHHMMSSZ`, years 1950–2049) or GeneralizedTime (`YYYYMMDDHHMMSSZ`).
fn der_time(tag: u8, v: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(v).ok()?;
    let full = match tag {
        0x17 => {
            let yy: i32 = s.get(..2)?.parse().ok()?;
            format!("{}{s}", if yy >= 50 { "19" } else { "20" })
        }
        0x18 => s.to_string(),
        _ => return None,
    };
    chrono::NaiveDateTime::parse_from_str(full.strip_suffix('Z')?, "%Y%m%d%H%M%S")
        .ok()
        .map(|t| t.and_utc().timestamp())
}

/// What to do about a certificate failure in an error chain, in words; `None` when the
/// chain holds no certificate error.
pub fn advice(e: &(dyn std::error::Error + 'static)) -> Option<&'static str> {
    if let Some(rustls::Error::InvalidCertificate(c)) = rustls_error(e) {
        {
            return Some(match c {
                CertificateError::UnknownIssuer => {
                    "the server's certificate is not signed by a CA floe trusts: point ca_file (--ca-file) at the CA that signed it, or at the server's own certificate"
                }
                CertificateError::NotValidForName
                | CertificateError::NotValidForNameContext { .. } => {
                    "the certificate does not name the host in the URL: connect by a name (or an IP address) the certificate lists"
                }
                CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                    "the server's certificate has expired: renew it on the server"
                }
                CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                    "the server's certificate is not valid yet: check the clocks of this machine and the server"
                }
                CertificateError::Revoked => "the server's certificate was revoked",
                CertificateError::BadSignature => {
                    "the certificate's signature does not verify: it was not signed by the CA in the file"
                }
                _ => {
                    "the server's certificate is refused: put the CA that signed it, or the certificate itself, in ca_file (--ca-file)"
                }
            });
        }
    }
    None
}

/// The rustls error in an error chain, by type. `io::Error`'s `source` skips the error it
/// wraps (and a connector may wrap an `io::Error` in another): each is looked inside.
pub fn rustls_error<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut src: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = src {
        let mut inner = Some(s);
        while let Some(i) = inner {
            if let Some(r) = i.downcast_ref::<rustls::Error>() {
                return Some(r);
            }
            inner = i
                .downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .map(|x| x as &(dyn std::error::Error + 'static));
        }
        src = s.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_times_read_both_forms() {
        assert_eq!(der_time(0x17, b"260102030405Z"), Some(1_767_323_045));
        assert_eq!(der_time(0x18, b"20260102030405Z"), Some(1_767_323_045));
        assert_eq!(der_time(0x17, b"500101000000Z"), Some(-631_152_000));
        assert_eq!(der_time(0x17, b"garbage"), None);
        assert_eq!(validity(b"\x30\x00"), None);
        assert_eq!(tlv(b"\x30\x85\x01"), None);
    }
}

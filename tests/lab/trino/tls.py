"""A throwaway certificate authority and a server certificate for 127.0.0.1 / localhost.

`PYTHONPATH=tests python -m lab.trino.tls --out DIR` writes DIR/ca.pem, DIR/ca-key.pem, DIR/server.pem
(leaf + CA chain, valid for localhost, 127.0.0.1 and 127.0.0.2) and DIR/server-key.pem, plus
DIR/other-ca.pem: a second, unrelated CA that signed nothing the lab serves (a client trusting
only it must fail the handshake). Existing files are kept.
"""

from __future__ import annotations

import argparse
import datetime as dt
import ipaddress
import os
from pathlib import Path


def ensure_certificates(out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "ca_file": out / "ca.pem",
        "ca_key": out / "ca-key.pem",
        "cert_file": out / "server.pem",
        "key_file": out / "server-key.pem",
        "other_ca_file": out / "other-ca.pem",
    }
    if all(p.exists() for p in paths.values()):
        return {k: str(v) for k, v in paths.items()}

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = dt.datetime.now(dt.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "floe lab"),
        x509.NameAttribute(NameOID.COMMON_NAME, "floe lab CA"),
    ])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                key_encipherment=False, data_encipherment=False, key_agreement=False,
                encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "floe lab"),
            x509.NameAttribute(NameOID.COMMON_NAME, "localhost"),
        ]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=825))
        .add_extension(
            x509.SubjectAlternativeName([
                x509.DNSName("localhost"),
                x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                x509.IPAddress(ipaddress.ip_address("127.0.0.2")),
            ]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )

    def write(path: Path, data: bytes, private: bool = False) -> None:
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_bytes(data)
        if private:
            os.chmod(tmp, 0o600)
        tmp.replace(path)

    other_key = ec.generate_private_key(ec.SECP256R1())
    other_name = x509.Name([
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "unrelated org"),
        x509.NameAttribute(NameOID.COMMON_NAME, "unrelated CA"),
    ])
    other_ca = (
        x509.CertificateBuilder()
        .subject_name(other_name)
        .issuer_name(other_name)
        .public_key(other_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(other_key.public_key()), critical=False)
        .sign(other_key, hashes.SHA256())
    )

    pem = serialization.Encoding.PEM
    write(paths["ca_key"], ca_key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                                serialization.NoEncryption()), private=True)
    write(paths["key_file"], key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()), private=True)
    write(paths["cert_file"], cert.public_bytes(pem) + ca_cert.public_bytes(pem))
    write(paths["ca_file"], ca_cert.public_bytes(pem))
    write(paths["other_ca_file"], other_ca.public_bytes(pem))
    return {k: str(v) for k, v in paths.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    print(ensure_certificates(Path(args.out)))


if __name__ == "__main__":
    main()

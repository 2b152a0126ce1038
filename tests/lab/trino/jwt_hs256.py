"""HS256 JSON Web Tokens with the standard library only (labctl mints, the server verifies).

Error messages follow the jjwt library Trino's JwtAuthenticator uses, because Trino passes
them through as the 401 body.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64url_decode(text: str) -> bytes:
    pad = "=" * (-len(text) % 4)
    return base64.urlsafe_b64decode(text + pad)


def mint(secret: bytes, subject: str, lifetime_s: int = 30 * 24 * 3600, **claims) -> str:
    now = int(time.time())
    header = {"alg": "HS256", "typ": "JWT"}
    payload = {"sub": subject, "iat": now, "exp": now + lifetime_s, **claims}
    signing_input = _b64url(json.dumps(header, separators=(",", ":")).encode()) + "." + _b64url(
        json.dumps(payload, separators=(",", ":")).encode()
    )
    sig = hmac.new(secret, signing_input.encode("ascii"), hashlib.sha256).digest()
    return signing_input + "." + _b64url(sig)


class JwtError(Exception):
    pass


def verify(secret: bytes, token: str) -> dict:
    """Return the claims of a valid token, else raise JwtError with jjwt's wording."""
    parts = token.split(".")
    if len(parts) != 3:
        raise JwtError(
            f"Invalid compact JWT string: Compact JWSs must contain exactly 2 period characters, "
            f"and compact JWEs must contain exactly 4.  Found: {len(parts) - 1}"
        )
    try:
        header = json.loads(_b64url_decode(parts[0]))
        payload = json.loads(_b64url_decode(parts[1]))
        sig = _b64url_decode(parts[2])
    except Exception as e:  # noqa: BLE001 - any decoding problem is a malformed token
        raise JwtError(f"Malformed JWT: {e}") from None
    if header.get("alg") != "HS256":
        raise JwtError(f"Unsupported signature algorithm '{header.get('alg')}'")
    expected = hmac.new(secret, (parts[0] + "." + parts[1]).encode("ascii"), hashlib.sha256).digest()
    if not hmac.compare_digest(expected, sig):
        raise JwtError(
            "JWT signature does not match locally computed signature. JWT validity cannot be "
            "asserted and should not be trusted."
        )
    now = time.time()
    exp = payload.get("exp")
    if exp is not None and now >= float(exp):
        ms = int((now - float(exp)) * 1000)
        raise JwtError(
            f"JWT expired {ms} milliseconds ago at "
            f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(float(exp)))}. Current time: "
            f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(now))}. Allowed clock skew: 0 milliseconds."
        )
    nbf = payload.get("nbf")
    if nbf is not None and now < float(nbf):
        raise JwtError("JWT early")
    if not payload.get("sub"):
        raise JwtError("JWT has no subject")
    return payload

"""Trino's OAuth2 external authentication, the lab's way: the challenge, the token server and a
minimal identity provider, all on the listener whose `auth` is `["oauth2"]`.

- A statement request without a valid token gets 401 with
  `WWW-Authenticate: Bearer x_redirect_server="<base>/oauth2/authorize/<id>", x_token_server="<base>/oauth2/token/<id>"`
  (a new flow per challenge, as Trino's `OAuth2Authenticator` does).
- `GET /oauth2/token/<id>` long-polls (at most `poll_wait_s`): `{"nextUri": <same URL>}` while the
  flow is pending, `{"token": <JWT>}` once someone logged in, `{"error": …}` when the login was
  refused or the flow is unknown. `DELETE` forgets the flow (the Java client sends it).
- `GET /oauth2/authorize/<id>[?user=NAME][&deny=1]` is the identity provider: visiting it "logs in"
  NAME (default `default_user`) and completes the flow; `deny=1` fails it (`access_denied`).
- Tokens are HS256 JWTs signed with the lab's JWT secret (like `bearer_token`), subject the user,
  lifetime `token_lifetime_s`, and a `gen` claim: `revoke` bumps the generation, so every token
  issued before is rejected (a server-side revocation).

Control (`/_lab/oauth2` on the plain listener): `GET` the counters and settings, `POST`
`{"token_lifetime_s": N, "poll_wait_s": S, "default_user": U, "challenge_host": H | null,
"revoke": true, "reset": true}`.
"""

from __future__ import annotations

import secrets
import threading
import time

from . import jwt_hs256

FLOW_TTL_S = 600


class OAuth2Provider:
    def __init__(self, jwt_secret: bytes | None, default_user: str = "carol") -> None:
        self.secret = jwt_secret or secrets.token_bytes(32)
        self.default_user = default_user
        self.token_lifetime_s = 3600
        self.poll_wait_s = 1.0
        self.challenge_host: str | None = None
        self.generation = 0
        self.flows: dict[str, dict] = {}
        self.cond = threading.Condition()
        self.counters = self._zero()

    @staticmethod
    def _zero() -> dict:
        return {"challenges": 0, "logins": 0, "denied": 0, "tokens_issued": 0, "token_polls": 0,
                "token_deletes": 0, "accepted": 0, "rejected": 0}

    # ------------------------------------------------------------------ authentication
    def verify(self, token: str) -> str:
        """The user of a valid token, else raise jwt_hs256.JwtError (the 401 body)."""
        claims = jwt_hs256.verify(self.secret, token)
        if claims.get("gen") != self.generation or claims.get("iss") != "lab-oauth2":
            with self.cond:
                self.counters["rejected"] += 1
            raise jwt_hs256.JwtError("Access Denied: the token was revoked")
        with self.cond:
            self.counters["accepted"] += 1
        return str(claims["sub"])

    def challenge(self, base: str) -> str:
        """A new flow and its `WWW-Authenticate` challenge, URLs on `base` (scheme://host:port)."""
        if self.challenge_host:
            scheme, _, rest = base.partition("://")
            port = rest.rpartition(":")[2]
            base = f"{scheme}://{self.challenge_host}:{port}"
        flow = secrets.token_urlsafe(12)
        with self.cond:
            self._expire_locked()
            self.flows[flow] = {"state": "pending", "created": time.time(), "token": None, "error": None}
            self.counters["challenges"] += 1
        return (f'Bearer x_redirect_server="{base}/oauth2/authorize/{flow}", '
                f'x_token_server="{base}/oauth2/token/{flow}"')

    def _expire_locked(self) -> None:
        now = time.time()
        for k in [k for k, f in self.flows.items() if now - f["created"] > FLOW_TTL_S]:
            del self.flows[k]

    # ------------------------------------------------------------------ endpoints
    def authorize(self, flow: str, user: str | None, deny: bool) -> tuple[int, str]:
        """The identity provider's login page: completes (or refuses) the flow."""
        with self.cond:
            f = self.flows.get(flow)
            if f is None:
                return 404, "Unknown or expired login.\n"
            if f["state"] != "pending":
                return 409, "This login is already finished.\n"
            if deny:
                f["state"], f["error"] = "error", "access_denied: the identity provider refused the login"
                self.counters["denied"] += 1
                self.cond.notify_all()
                return 403, "Login refused.\n"
            user = user or self.default_user
            f["token"] = jwt_hs256.mint(self.secret, user, lifetime_s=int(self.token_lifetime_s),
                                        gen=self.generation, iss="lab-oauth2", jti=secrets.token_hex(8))
            f["state"] = "done"
            f["user"] = user
            self.counters["logins"] += 1
            self.cond.notify_all()
        return 200, f"Logged in to the lab's Trino as {user}. You may close this window.\n"

    def poll(self, flow: str, url: str) -> dict:
        """One GET of the token server, long-polling while the login is pending."""
        deadline = time.monotonic() + self.poll_wait_s
        with self.cond:
            self.counters["token_polls"] += 1
            while True:
                f = self.flows.get(flow)
                if f is None:
                    return {"error": "unknown or expired authentication"}
                if f["state"] == "done":
                    self.counters["tokens_issued"] += 1
                    f["state"] = "delivered"
                    return {"token": f["token"]}
                if f["state"] == "delivered":
                    return {"token": f["token"]}
                if f["state"] == "error":
                    return {"error": f["error"]}
                left = deadline - time.monotonic()
                if left <= 0:
                    return {"nextUri": url}
                self.cond.wait(left)

    def delete(self, flow: str) -> None:
        with self.cond:
            if self.flows.pop(flow, None) is not None:
                self.counters["token_deletes"] += 1

    # ------------------------------------------------------------------ control
    def describe(self) -> dict:
        with self.cond:
            return {**self.counters, "token_lifetime_s": self.token_lifetime_s,
                    "poll_wait_s": self.poll_wait_s, "default_user": self.default_user,
                    "challenge_host": self.challenge_host, "generation": self.generation,
                    "pending": sum(1 for f in self.flows.values() if f["state"] == "pending")}

    def configure(self, payload: dict) -> dict:
        with self.cond:
            if payload.get("reset"):
                self.counters = self._zero()
                self.flows.clear()
                self.token_lifetime_s, self.poll_wait_s, self.challenge_host = 3600, 1.0, None
            if "token_lifetime_s" in payload:
                self.token_lifetime_s = float(payload["token_lifetime_s"] or 3600)
            if "poll_wait_s" in payload:
                self.poll_wait_s = float(payload["poll_wait_s"] if payload["poll_wait_s"] is not None else 1.0)
            if "default_user" in payload and payload["default_user"]:
                self.default_user = str(payload["default_user"])
            if "challenge_host" in payload:
                self.challenge_host = payload["challenge_host"] or None
            if payload.get("revoke"):
                self.generation += 1
        return self.describe()

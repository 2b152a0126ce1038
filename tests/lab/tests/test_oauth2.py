"""The OAuth2 listener (`trino.oauth2_url`): Trino's external-authentication challenge, the
token server and the lab's identity provider, driven by hand."""

from __future__ import annotations

import re
import threading
import time

import pytest
import requests

# Reads and writes only what it makes itself (its own users, tables, servers and
# caches): runs beside floe's tests (see conftest.py).
pytestmark = pytest.mark.beside_suite

CHALLENGE = re.compile(r'^Bearer x_redirect_server="([^"]+)", x_token_server="([^"]+)"$')


@pytest.fixture
def oauth2(lab):
    base = lab["stand_in"]["oauth2_url"]
    ctl = lab["stand_in"]["oauth2_control_url"]
    http = requests.Session()
    http.trust_env = False
    http.post(ctl, json={"reset": True}, timeout=10).raise_for_status()
    yield base, ctl, http
    http.post(ctl, json={"reset": True}, timeout=10).raise_for_status()


def challenge(http, base):
    r = http.post(f"{base}/v1/statement", data="SELECT 1", headers={"X-Trino-User": "carol"}, timeout=10)
    assert r.status_code == 401, r.text
    m = CHALLENGE.match(r.headers["WWW-Authenticate"])
    assert m, r.headers["WWW-Authenticate"]
    return m.group(1), m.group(2)


def run(http, base, token, sql="SELECT 1 AS one"):
    r = http.post(f"{base}/v1/statement", data=sql,
                  headers={"X-Trino-User": "carol", "Authorization": f"Bearer {token}"}, timeout=10)
    if r.status_code != 200:
        return r
    page = r.json()
    rows = list(page.get("data") or [])
    while "nextUri" in page:
        page = http.get(page["nextUri"], timeout=10).json()
        rows += page.get("data") or []
    return {**page, "data": rows}


def test_unauthenticated_requests_get_the_challenge_on_the_coordinators_origin(oauth2):
    base, ctl, http = oauth2
    redirect, token_server = challenge(http, base)
    assert redirect.startswith(f"{base}/oauth2/authorize/")
    assert token_server.startswith(f"{base}/oauth2/token/")
    assert redirect.rsplit("/", 1)[1] == token_server.rsplit("/", 1)[1]
    # /v1/info stays public
    assert http.get(f"{base}/v1/info", timeout=10).status_code == 200
    assert http.get(ctl, timeout=10).json()["challenges"] == 1


def test_the_token_server_long_polls_until_the_login_then_hands_out_a_jwt(oauth2):
    base, ctl, http = oauth2
    http.post(ctl, json={"poll_wait_s": 0.3}, timeout=10)
    redirect, token_server = challenge(http, base)
    t0 = time.monotonic()
    pending = http.get(token_server, timeout=10).json()
    assert pending == {"nextUri": token_server}
    assert time.monotonic() - t0 >= 0.25, "a pending poll waits"
    # A login while a poll waits completes it at once.
    http.post(ctl, json={"poll_wait_s": 5}, timeout=10)
    timer = threading.Timer(0.3, lambda: http.get(redirect + "?user=dave", timeout=10))
    timer.start()
    t0 = time.monotonic()
    done = http.get(token_server, timeout=10).json()
    assert time.monotonic() - t0 < 4
    token = done["token"]
    assert token.count(".") == 2
    page = run(http, base, token)
    assert page["stats"]["state"] == "FINISHED" and page["data"] == [[1]]
    assert http.delete(token_server, timeout=10).status_code == 204
    assert "error" in http.get(token_server, timeout=10).json(), "a deleted flow is forgotten"
    c = http.get(ctl, timeout=10).json()
    assert (c["logins"], c["tokens_issued"], c["token_deletes"], c["accepted"]) == (1, 1, 1, 1)


def test_the_default_user_and_a_refused_login(oauth2):
    base, ctl, http = oauth2
    redirect, token_server = challenge(http, base)
    r = http.get(redirect, timeout=10)
    assert r.status_code == 200 and "as carol" in r.text
    assert http.get(redirect, timeout=10).status_code == 409, "a flow logs in once"
    redirect, token_server = challenge(http, base)
    assert http.get(redirect + "?deny=1", timeout=10).status_code == 403
    assert "access_denied" in http.get(token_server, timeout=10).json()["error"]


def test_lifetime_and_revocation(oauth2):
    base, ctl, http = oauth2
    http.post(ctl, json={"token_lifetime_s": 1}, timeout=10)
    redirect, token_server = challenge(http, base)
    http.get(redirect, timeout=10)
    token = http.get(token_server, timeout=10).json()["token"]
    assert run(http, base, token)["stats"]["state"] == "FINISHED"
    time.sleep(1.5)
    r = run(http, base, token)
    assert r.status_code == 401 and "JWT expired" in r.text
    assert CHALLENGE.match(r.headers["WWW-Authenticate"]), "a refused token gets a new challenge"
    http.post(ctl, json={"token_lifetime_s": 3600}, timeout=10)
    redirect, token_server = challenge(http, base)
    http.get(redirect, timeout=10)
    token = http.get(token_server, timeout=10).json()["token"]
    assert run(http, base, token)["stats"]["state"] == "FINISHED"
    http.post(ctl, json={"revoke": True}, timeout=10)
    r = run(http, base, token)
    assert r.status_code == 401 and "revoked" in r.text
    assert http.get(ctl, timeout=10).json()["rejected"] >= 1


def test_a_401_leaves_a_kept_alive_connection_usable(oauth2):
    base, ctl, http = oauth2
    for _ in range(3):
        challenge(http, base)  # same session: the POST bodies must not spill into the next request
    assert http.get(ctl, timeout=10).json()["challenges"] == 3


def test_the_challenge_host_can_point_elsewhere(oauth2, lab):
    base, ctl, http = oauth2
    alias = lab["stand_in"].get("alias_host")
    if not alias:
        pytest.skip("no alias loopback address")
    http.post(ctl, json={"challenge_host": alias}, timeout=10)
    redirect, token_server = challenge(http, base)
    port = base.rsplit(":", 1)[1]
    assert token_server.startswith(f"http://{alias}:{port}/oauth2/token/")

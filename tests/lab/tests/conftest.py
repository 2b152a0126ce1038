"""Shared fixtures for the lab's own tests. They need a running lab (`cargo xtask lab up`);
a missing lab is an error, never a skip."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

LAB_ROOT = Path(__file__).resolve().parents[1]          # tests/lab
REPO_ROOT = LAB_ROOT.parents[1]


def pytest_configure(config) -> None:
    # `cargo xtask test` runs the tests marked beside_suite beside floe's own tests, and the
    # others before them: those read what the suite writes (the seed through the real
    # Trinos, the stand-in's view of the scenario, the Airflows' histories, the dashboard's
    # runs) or read it as the lab's start left it. A file is marked only when it reads and
    # writes nothing but what it makes itself; unmarked is the safe default.
    config.addinivalue_line("markers", "beside_suite: runs beside floe's tests (`cargo xtask test`)")
    # the engine runs compiled statements with a plain execute on purpose (engine/query.py)
    config.addinivalue_line("filterwarnings", "ignore:Arrow output on a DB-API result:UserWarning")


def lab_dir() -> Path:
    return Path(os.environ.get("FLOE_LAB_DIR", REPO_ROOT / ".lab"))


@pytest.fixture(scope="session")
def lab() -> dict:
    """lab.json: `trino` is the real coordinator, `stand_in` the lab's Trino-protocol server
    these tests check (a lab started with --no-real-trino has only `trino`, the stand-in)."""
    path = lab_dir() / "lab.json"
    if not path.exists():
        pytest.fail(f"{path} not found: the lab is not running (start it with `cargo xtask lab up`)")
    doc = json.loads(path.read_text())
    doc.setdefault("stand_in", doc["trino"])
    return doc


# --------------------------------------------------------------------------- protocol fixtures
# An inherited REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE overrides a session's `verify` in requests
# (the environment wins over Session.verify), which would hide the lab's own CA.
for _var in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
    os.environ.pop(_var, None)

import itertools  # noqa: E402
import uuid  # noqa: E402

_user_counter = itertools.count()


@pytest.fixture
def user() -> str:
    """A user name of its own, so faults and settings scoped to it touch no other test."""
    return f"t{next(_user_counter)}_{uuid.uuid4().hex[:6]}"


@pytest.fixture
def control(lab):
    """The lab's control endpoint; faults and settings made through it are undone afterwards."""
    import requests

    class Control:
        def __init__(self, base: str):
            self.base = base
            self.http = requests.Session()
            self.http.trust_env = False
            self._users: set = set()
            self._config_users: set = set()

        def faults(self, user, *rules):
            self._users.add(user)
            r = self.http.post(f"{self.base}/faults", json={"user": user, "rules": list(rules)}, timeout=10)
            assert r.status_code == 200, r.text
            return r.json()

        def fault_state(self):
            return self.http.get(f"{self.base}/faults", timeout=10).json()

        def fault_state_for(self, user):
            return [r for r in self.fault_state() if r["user"] == user]

        def config(self, user, **settings):
            self._config_users.add(user)
            r = self.http.post(f"{self.base}/config", json={"user": user, **settings}, timeout=10)
            assert r.status_code == 200, r.text
            return r.json()

        def queries(self, user=None):
            rows = self.http.get(f"{self.base}/queries", timeout=10).json()
            return [q for q in rows if user is None or q["user"] == user]

        def query(self, query_id):
            for q in self.queries():
                if q["id"] == query_id:
                    return q
            raise AssertionError(f"query {query_id} unknown to the lab")

        def engine(self, op, payload=None):
            return self.http.post(f"{self.base}/engine/{op}", json=payload or {}, timeout=600)

        def cleanup(self):
            for u in self._users:
                self.http.delete(f"{self.base}/faults", params={"user": u}, timeout=10)
            for u in self._config_users:
                self.http.post(f"{self.base}/config",
                               json={"user": u, "page_size": None, "client_timeout_s": None}, timeout=10)

    c = Control(lab["stand_in"]["control_url"])
    yield c
    c.cleanup()


@pytest.fixture
def connect(lab):
    """connect(user=..., listener=None|'v481'|'v451', **kw) -> a trino.dbapi connection."""
    import trino

    from urllib.parse import urlsplit

    def _connect(user: str = "floe", listener: str | None = None, **kw):
        url = lab["stand_in"]["url"] if listener is None else lab["stand_in"]["listeners"][listener]
        parts = urlsplit(url)
        kw.setdefault("catalog", lab["stand_in"]["catalog"])
        return trino.dbapi.connect(host=parts.hostname, port=parts.port, user=user,
                                   http_scheme=parts.scheme, **kw)

    return _connect


@pytest.fixture(scope="session")
def expected(lab) -> dict:
    return json.loads(Path(lab["scenario"]["expected"]).read_text())


class RawClient:
    """Speaks the client protocol by hand with requests, keeping every page it saw."""

    def __init__(self, base: str, user: str | None, verify=True, auth=None):
        import requests

        self.base = base
        self.http = requests.Session()
        self.http.trust_env = False
        self.http.verify = verify
        self.user = user
        self.auth = auth

    def headers(self, **extra) -> dict:
        h = {"X-Trino-Time-Zone": "UTC", "X-Trino-Client-Capabilities": "PARAMETRIC_DATETIME",
             "X-Trino-Source": "floe-lab-tests"}
        if self.user is not None:
            h["X-Trino-User"] = self.user
        h.update({k.replace("_", "-"): v for k, v in extra.items() if v is not None})
        return h

    def post(self, sql: str, headers: dict | None = None):
        h = self.headers()
        if headers is not None:
            h.update(headers)
            h = {k: v for k, v in h.items() if v is not None}
        return self.http.post(f"{self.base}/v1/statement", data=sql.encode(), headers=h,
                              auth=self.auth, timeout=30)

    def get(self, uri: str, **kw):
        return self.http.get(uri, timeout=30, **kw)

    def run(self, sql: str, headers: dict | None = None, max_pages: int = 100000) -> list[dict]:
        """POST and follow nextUri to the end; returns every page."""
        r = self.post(sql, headers)
        assert r.status_code == 200, (r.status_code, r.text)
        pages = [r.json()]
        while "nextUri" in pages[-1] and len(pages) < max_pages:
            r = self.get(pages[-1]["nextUri"])
            assert r.status_code == 200, (r.status_code, r.text)
            pages.append(r.json())
        return pages

    def run_from(self, first: dict, max_pages: int = 100000) -> list[dict]:
        """Follow nextUri from a page already received, sending the client's credentials
        (as a client that trusts every nextUri would); returns every page."""
        pages = [first]
        while "nextUri" in pages[-1] and len(pages) < max_pages:
            r = self.http.get(pages[-1]["nextUri"], auth=self.auth, timeout=30)
            assert r.status_code == 200, (r.status_code, r.text)
            pages.append(r.json())
        return pages

    @staticmethod
    def rows(pages: list[dict]) -> list:
        return [row for p in pages for row in p.get("data", [])]


@pytest.fixture
def raw(lab, user):
    return RawClient(lab["stand_in"]["url"], user)


@pytest.fixture
def raw_factory(lab):
    def make(base: str | None = None, user: str | None = "floe", **kw):
        return RawClient(base or lab["stand_in"]["url"], user, **kw)

    return make

"""The lab's Airflows through their REST APIs: Airflow 3 (API v2, JWT from /auth/token) and
Airflow 2 (API v1, HTTP basic auth). The maintenance DAGs reach their intended states, the
failing task's log carries the dead-host error, and authentication behaves as documented.

Every test runs against both unless it is marked for one API (`ONLY_V2`, `ONLY_V1`). Reads
`lab.json`'s `airflow` and `airflow2` entries (written from `tests/lab/airflow/ctl.py up`'s JSON
line); Airflow 2 needs the lab started with `--airflow2` (as `cargo xtask test` does), without
it its tests fail. These tests only read; they never trigger, clear or pause anything.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import importlib.util
import json
import socket
import time
import urllib.parse
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import requests

CTL_PATH = Path(__file__).resolve().parents[1] / "airflow" / "ctl.py"
HISTORY_DAYS = 14
HEALTHY_HISTORY_DAYS = 3  # the DAGs that report success (airflow/ctl.py)
DEAD_ENDPOINT = "trino-old.internal:8080"
TABLES = {
    "compact_documents": "iceberg.zoning.documents",
    "compact_permits": "iceberg.zoning.permits",
    "compact_parcels": "iceberg.zoning.parcels",
    "expire_snapshots": "iceberg.audit.events",
}


def q(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")


def ts(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def load_ctl():
    spec = importlib.util.spec_from_file_location("lab_airflow_ctl", CTL_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------------------------ clients


class Api:
    """One Airflow REST API as these tests use it; the subclasses hold what differs."""

    version = ""            # "v2" | "v1"
    major = 0               # the Airflow release line it belongs to
    lab_key = ""            # its entry in lab.json
    pid_prefix = ""         # its processes' names in lab.json's `pids`
    health_path = ""
    healthy = ()            # components /health reports healthy
    run_order = ""          # newest run first

    def __init__(self, base: str):
        self.base = base.rstrip("/")
        self.s = requests.Session()

    def url(self, path: str) -> str:
        return f"{self.base}/api/{self.version}{path}"

    def get(self, path: str, **params):
        r = self.s.get(self.url(path), params=params, timeout=60)
        assert r.status_code == 200, f"GET {path} -> {r.status_code} {r.text[:500]}"
        return r.json()

    def runs(self, dag_id: str) -> list[dict]:
        body = self.get(f"/dags/{dag_id}/dagRuns", limit=100, order_by=self.run_order)
        assert body["total_entries"] == len(body["dag_runs"])
        return body["dag_runs"]

    def tis(self, dag_id: str, run_id: str) -> dict[str, dict]:
        body = self.get(f"/dags/{dag_id}/dagRuns/{q(run_id)}/taskInstances")
        return {t["task_id"]: t for t in body["task_instances"]}

    def log_url(self, dag_id: str, run_id: str, task_id: str, try_number: int) -> str:
        return self.url(f"/dags/{dag_id}/dagRuns/{q(run_id)}/taskInstances/{task_id}/logs/{try_number}")

    def assert_refused(self, r: requests.Response, status: int, text: str) -> None:
        """An error answer: the status and the API's own wording of it."""
        raise NotImplementedError


class V2(Api):
    version, major, lab_key, pid_prefix = "v2", 3, "airflow", "airflow-"
    health_path, healthy = "/monitor/health", ("metadatabase", "scheduler", "dag_processor")
    run_order = "-run_after"

    def __init__(self, base: str, user: str, password: str):
        super().__init__(base)
        r = self.s.post(f"{self.base}/auth/token", json={"username": user, "password": password}, timeout=30)
        assert r.status_code == 201, r.text
        self.token = r.json()["access_token"]
        self.s.headers["Authorization"] = f"Bearer {self.token}"

    def log(self, dag_id: str, run_id: str, task_id: str, try_number: int = 1) -> "Log":
        body = self.get(f"/dags/{dag_id}/dagRuns/{q(run_id)}/taskInstances/{task_id}/logs/{try_number}",
                        full_content="true")
        return StructuredLog(body)

    def assert_refused(self, r, status, text):
        assert r.status_code == status
        assert r.json() == {"detail": text}


class V1(Api):
    version, major, lab_key, pid_prefix = "v1", 2, "airflow2", "airflow2-"
    health_path, healthy = "/health", ("metadatabase", "scheduler")
    run_order = "-execution_date"

    def __init__(self, base: str, user: str, password: str):
        super().__init__(base)
        self.s.auth = (user, password)

    def log(self, dag_id: str, run_id: str, task_id: str, try_number: int = 1) -> "Log":
        r = self.s.get(self.log_url(dag_id, run_id, task_id, try_number), params={"full_content": "true"},
                       headers={"Accept": "text/plain"}, timeout=60)
        assert r.status_code == 200, r.text[:500]
        assert r.headers["Content-Type"].startswith("text/plain")
        return TextLog(r.text)

    def assert_refused(self, r, status, text):
        assert r.status_code == status
        assert r.headers["Content-Type"].startswith("application/problem+json")
        assert r.json()["title"] == text


class Log:
    def mentions(self, text: str) -> bool:
        raise NotImplementedError

    def problems(self) -> list:
        """What a log that reports no trouble must not hold."""
        raise NotImplementedError


# Airflow's own note that a connection extra's value (the lab's "http") is too short to mask:
# the task SDK says it once per process, so whether a task's log holds it depends on which task
# that worker process ran first. It is about the connection's shape, not the task's work.
SECRETS_MASKER = "secrets_masker.secrets_masker"


class StructuredLog(Log):
    """API v2: the task log as structured events."""

    def __init__(self, body: dict):
        self.body = body
        self.content = body["content"]

    def mentions(self, text):
        return any(text in (m.get("event") or "") for m in self.content)

    def problems(self):
        return [m for m in self.content
                if (m.get("level") in ("error", "warning", "critical") or m.get("error_detail"))
                and not str(m.get("logger") or "").endswith(SECRETS_MASKER)]


class TextLog(Log):
    """API v1: the task log as text lines."""

    def __init__(self, text: str):
        self.text = text

    def mentions(self, text):
        return text in self.text

    def problems(self):
        return [ln for ln in self.text.splitlines() if " ERROR - " in ln or "Traceback" in ln]


APIS = [pytest.param(V2, id="airflow3-v2"), pytest.param(V1, id="airflow2-v1")]
ONLY_V2 = pytest.mark.parametrize("flavour", APIS[:1], indirect=True)
ONLY_V1 = pytest.mark.parametrize("flavour", APIS[1:], indirect=True)


@pytest.fixture(scope="module", params=APIS)
def flavour(request) -> type[Api]:
    return request.param


@pytest.fixture(scope="module")
def af(lab, flavour) -> dict:
    info = lab.get(flavour.lab_key)
    hint = "start the lab with `--airflow2`" if flavour is V1 else "the lab was started without Airflow"
    assert info, f"lab.json has no `{flavour.lab_key}` entry: {hint}"
    assert info["api"] == flavour.version
    return info


@pytest.fixture(scope="module")
def api(af, flavour) -> Api:
    return flavour(af["url"], af["user"], af["password"])


# ------------------------------------------------------------------------------------ server


def test_version_and_health(af, flavour):
    v = requests.get(f"{af['url']}/api/{flavour.version}/version", timeout=30)
    assert v.status_code == 200
    assert v.json()["version"] == af["version"]
    assert af["version"].startswith(f"{flavour.major}.")
    h = requests.get(f"{af['url']}/api/{flavour.version}{flavour.health_path}", timeout=30).json()
    for part in flavour.healthy:
        assert h[part]["status"] == "healthy", h
    # each release line serves its own API only (Airflow 3 removed /api/v1)
    other = "v1" if flavour is V2 else "v2"
    r = requests.get(f"{af['url']}/api/{other}/version", timeout=30)
    assert r.status_code == 404


def _airflow_pids(lab, af, flavour) -> list[int]:
    pids = [p for name, p in (lab.get("pids") or {}).items() if name.startswith(flavour.pid_prefix)]
    pids += list((af.get("pids") or {}).values())
    home = af.get("home")
    if home and (Path(home) / "ctl-state.json").exists():
        state = json.loads((Path(home) / "ctl-state.json").read_text())
        pids += [p["pid"] for p in state["procs"].values()]
    return sorted(set(pids))


def listening_addresses(root_pids: list[int]) -> list[tuple[str, int]]:
    """Listening TCP sockets of every process in the sessions of the given pids."""
    sessions = set(root_pids)
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                raw = (entry / "stat").read_text()
            except OSError:
                continue
            if int(raw[raw.rindex(")") + 2:].split()[3]) in sessions:
                members.append(entry)
    inodes = set()
    for proc in members:
        try:
            for fd in (proc / "fd").iterdir():
                target = str(fd.readlink()) if fd.is_symlink() else ""
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    found = []
    for table, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        for line in Path(table).read_text().splitlines()[1:]:
            cols = line.split()
            if cols[3] != "0A" or cols[9] not in inodes:  # 0A = LISTEN
                continue
            addr_hex, port_hex = cols[1].split(":")
            raw = bytes.fromhex(addr_hex)
            if family == socket.AF_INET:
                addr = socket.inet_ntop(family, raw[::-1])
            else:
                addr = socket.inet_ntop(family, b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))
            found.append((addr, int(port_hex, 16)))
    return found


def test_listens_on_loopback_only(lab, af, flavour):
    pids = _airflow_pids(lab, af, flavour)
    assert pids, f"no Airflow {flavour.major} pids recorded"
    listening = listening_addresses(pids)
    port = urllib.parse.urlsplit(af["url"]).port
    assert ("127.0.0.1", port) in listening
    assert all(addr == "127.0.0.1" for addr, _ in listening), listening


# ------------------------------------------------------------------------------------ DAGs


def test_maintenance_dags_tags_and_pause_state(api):
    body = api.get("/dags", tags="maintenance", limit=100)
    dags = {d["dag_id"]: d for d in body["dags"]}
    assert set(dags) == set(TABLES)
    for dag_id, table in TABLES.items():
        dag = dags[dag_id]
        assert {t["name"] for t in dag["tags"]} == {"maintenance", table}
        if api.version == "v2":
            assert dag["timetable_summary"] == "0 0 * * *"
        else:
            assert dag["schedule_interval"] == {"__type": "CronExpression", "value": "@daily"}
            assert dag["is_active"] is True
        assert dag["is_paused"] is (dag_id == "expire_snapshots")
        assert dag["has_import_errors"] is False
    # the table tag alone finds the DAG that maintains it
    assert [d["dag_id"] for d in api.get("/dags", tags="iceberg.zoning.documents")["dags"]] == ["compact_documents"]


def assert_daily_history(api: Api, runs: list[dict], state: str, days_kept: int = HISTORY_DAYS):
    assert len(runs) >= days_kept, f"{len(runs)} runs"
    assert {r["state"] for r in runs} == {state}, sorted({r["state"] for r in runs})
    assert {r["run_type"] for r in runs} == {"scheduled"}
    days = sorted(ts(r["logical_date"]) for r in runs)
    assert all(d.hour == d.minute == d.second == 0 for d in days)
    assert all(b - a == timedelta(days=1) for a, b in zip(days, days[1:])), days
    today = datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    # Airflow 2's @daily run for day D runs once D is over: the latest is yesterday's
    assert days[-1] >= today - timedelta(days=1), f"latest logical date {days[-1]} is stale"
    assert days[-1] - days[0] >= timedelta(days=days_kept - 1)
    for r in runs:  # ran for real: started and ended
        assert r["start_date"] and r["end_date"]
        if api.version == "v2":
            assert r["duration"] > 0
            assert r["triggered_by"] == "timetable"
        else:
            assert r["external_trigger"] is False
            assert r["execution_date"] == r["logical_date"]
            assert ts(r["data_interval_end"]) - ts(r["data_interval_start"]) == timedelta(days=1)


def test_compact_documents_two_weeks_of_failures(api):
    runs = api.runs("compact_documents")
    assert_daily_history(api, runs, "failed")
    latest = runs[0]
    assert latest["state"] == "failed"
    assert latest["logical_date"] == max(r["logical_date"] for r in runs)
    stats = {s["state"]: s["count"] for s in api.get("/dagStats", dag_ids="compact_documents")["dags"][0]["stats"]}
    assert stats["failed"] == len(runs) and stats["success"] == 0


@ONLY_V2
def test_dags_filter_by_last_run_state(api):
    """API v2 only: v1 has no `last_dag_run_state` filter."""
    failed = api.get("/dags", dag_id_pattern="compact_documents", last_dag_run_state="failed")
    assert [d["dag_id"] for d in failed["dags"]] == ["compact_documents"]


def test_compact_documents_failing_task(api):
    runs = api.runs("compact_documents")
    for run in (runs[0], runs[-1]):  # the latest and the oldest
        tis = api.tis("compact_documents", run["dag_run_id"])
        assert {k: v["state"] for k, v in tis.items()} == {
            "check_table": "success", "compact": "failed", "report": "upstream_failed"}
        assert tis["compact"]["try_number"] == 1
    failed = api.get("/dags/compact_documents/dagRuns/~/taskInstances", state="failed", limit=100)
    assert failed["total_entries"] == len(runs)
    assert {t["task_id"] for t in failed["task_instances"]} == {"compact"}


@ONLY_V2
def test_compact_documents_log_names_the_dead_host(api):
    run = api.runs("compact_documents")[0]
    log = api.log("compact_documents", run["dag_run_id"], "compact")
    assert log.body["continuation_token"] is None  # finished task
    errors = [m for m in log.content if m.get("level") == "error" and m.get("error_detail")]
    assert len(errors) == 1, [m.get("event") for m in log.content]
    assert errors[0]["event"] == "Task failed with exception"
    detail = errors[0]["error_detail"]
    head = detail[0]
    assert head["exc_type"] == "ConnectionError"
    assert DEAD_ENDPOINT in head["exc_value"]
    assert "Failed to resolve 'trino-old.internal'" in head["exc_value"]
    types = [d["exc_type"] for d in detail]
    assert "TrinoConnectionError" in types and "NameResolutionError" in types, types
    assert any(f["filename"].endswith("compact_documents.py") for f in head["frames"])
    # the statement that was attempted is logged before the failure
    assert log.mentions("EXECUTE optimize")


@ONLY_V1
def test_compact_documents_text_log_names_the_dead_host(api):
    run = api.runs("compact_documents")[0]
    log = api.log("compact_documents", run["dag_run_id"], "compact")
    text = log.text
    assert "ERROR - Task failed with exception" in text
    last = [ln for ln in text.splitlines() if ln.startswith("ConnectionError: ")]
    assert last, text[-2000:]
    assert DEAD_ENDPOINT in last[-1] and "Failed to resolve 'trino-old.internal'" in last[-1]
    assert "trino.exceptions.TrinoConnectionError: failed to execute" in text
    # the statement that was attempted is logged before the failure
    assert log.mentions("EXECUTE optimize")


def test_compact_permits_reports_success(api):
    runs = api.runs("compact_permits")
    assert_daily_history(api, runs, "success", HEALTHY_HISTORY_DAYS)
    tis = api.tis("compact_permits", runs[0]["dag_run_id"])
    assert {k: v["state"] for k, v in tis.items()} == {"compact": "success", "report": "success"}
    log = api.log("compact_permits", runs[0]["dag_run_id"], "compact")
    # the bare except: no error anywhere in the log of a compaction that never happened
    assert not log.problems()
    assert log.mentions("ALTER TABLE iceberg.zoning.permits EXECUTE optimize")


def test_compact_parcels_succeeds(api):
    runs = api.runs("compact_parcels")
    assert_daily_history(api, runs, "success", HEALTHY_HISTORY_DAYS)
    tis = api.tis("compact_parcels", runs[0]["dag_run_id"])
    assert {k: v["state"] for k, v in tis.items()} == {"compact": "success", "report": "success"}
    assert tis["compact"]["operator"] == "SQLExecuteQueryOperator"
    log = api.log("compact_parcels", runs[0]["dag_run_id"], "compact")
    assert log.mentions("ALTER TABLE iceberg.zoning.parcels EXECUTE optimize")


def test_expire_snapshots_paused_without_runs(api):
    dag = api.get("/dags/expire_snapshots")
    assert dag["is_paused"] is True
    assert api.get("/dags/expire_snapshots/dagRuns")["total_entries"] == 0


def test_import_errors_list_broken_dag(api):
    errors = api.get("/importErrors")["import_errors"]
    broken = [e for e in errors if e["filename"].endswith("broken_dag.py")]
    assert len(broken) == 1, [e["filename"] for e in errors]
    if api.version == "v2":  # relative to its DAG bundle
        assert broken[0]["filename"] == "broken_dag.py"
        assert broken[0]["bundle_name"] == "dags-folder"
    else:  # absolute on 2.x
        assert broken[0]["filename"].endswith("/broken_dag.py") and broken[0]["filename"].startswith("/")
    assert "ModuleNotFoundError: No module named 'lakehouse_maintenance_helpers'" in broken[0]["stack_trace"]


# ------------------------------------------------------------------------------------ connections


def test_connections_list_trino(lab, api):
    conns = {c["connection_id"]: c for c in api.get("/connections", limit=100)["connections"]}
    assert {"trino_default", "trino_documents", "trino_permits"} <= set(conns)
    trino = urllib.parse.urlsplit(lab["trino"]["url"])
    assert conns["trino_default"]["conn_type"] == "trino"
    assert (conns["trino_default"]["host"], conns["trino_default"]["port"]) == (trino.hostname, trino.port)
    assert conns["trino_default"]["login"] == lab["trino"]["user"]
    for cid in ("trino_documents", "trino_permits"):
        assert f"{conns[cid]['host']}:{conns[cid]['port']}" == DEAD_ENDPOINT
    if api.version == "v2":  # v1 lists connections without their extra
        assert json.loads(conns["trino_default"]["extra"])["catalog"] == "iceberg"


def _test_connection(api: Api, cid: str):
    """POST /connections/test of the stored connection `cid` (its fields, without its
    password: Airflow 2 tests only the body it is sent); the response."""
    conn = api.get(f"/connections/{cid}")
    body = {k: conn[k] for k in ("connection_id", "conn_type", "host", "port", "login", "schema", "extra")}
    return api.s.post(api.url("/connections/test"), json=body, timeout=120)


def _tested(af, api: Api, cid: str) -> dict | None:
    """The test's result where `[core] test_connection` is enabled; where it is at Airflow's
    default (disabled, as deployed) the API refuses it with 403, and None is returned."""
    r = _test_connection(api, cid)
    if af["test_connection"] == "Disabled":
        assert r.status_code == 403, r.text
        assert "test_connection" in r.text or "disabled" in r.text.lower(), r.text
        return None
    assert af["test_connection"] == "Enabled", af
    assert r.status_code == 200, r.text
    return r.json()


def test_one_airflow_runs_with_the_connection_test_at_its_default(lab):
    # Airflow 2 as deployed (Disabled, Airflow's default since 2.7); Airflow 3 enabled.
    assert lab["airflow"]["test_connection"] == "Enabled"
    if lab.get("airflow2"):
        assert lab["airflow2"]["test_connection"] == "Disabled"


def test_where_the_test_is_disabled_a_second_api_of_the_same_airflow_has_it_enabled(af, flavour):
    if af["test_connection"] != "Disabled":
        assert af.get("tested_url") is None, af
        return
    tested = flavour(af["tested_url"], af["user"], af["password"])
    assert tested.get("/version")["version"] == af["version"]
    # The same metadata DB: the same connections, tested there.
    result = _test_connection(tested, "trino_default")
    assert result.status_code == 200, result.text
    assert result.json() == {"status": True, "message": "Connection successfully tested"}
    result = _test_connection(tested, "trino_documents")
    assert result.status_code == 200 and result.json()["status"] is False, result.text


def test_connection_test_live_trino(af, api):
    result = _tested(af, api, "trino_default")
    if result is not None:
        assert result == {"status": True, "message": "Connection successfully tested"}


def test_connection_test_dead_host(af, api):
    result = _tested(af, api, "trino_documents")
    if result is not None:
        assert result["status"] is False
        assert "trino-old.internal" in result["message"] and "port=8080" in result["message"]
        assert "Failed to resolve" in result["message"]


def test_the_tls_connection_holds_a_login_password_and_https(lab, af, api):
    tls = urllib.parse.urlsplit(lab["trino_tls"]["url"])
    conn = api.get("/connections/trino_tls")
    assert (conn["host"], conn["port"], conn["login"]) == (tls.hostname, tls.port, lab["trino_tls"]["user"])
    if api.version == "v2":
        extra = json.loads(conn["extra"])
        assert extra["protocol"] == "https" and extra["verify"] == lab["trino_tls"]["ca_file"]
    # the password is stored (the API never returns it in clear)
    assert conn.get("password") in (None, "", "***") or conn["password"] != lab["trino_tls"]["password"]


# ------------------------------------------------------------------------------------ auth


def test_viewer_reads_but_cannot_pause(af, flavour):
    viewer = flavour(af["url"], af["viewer_user"], af["viewer_password"])
    assert viewer.get("/dags/compact_documents")["dag_id"] == "compact_documents"
    r = viewer.s.patch(viewer.url("/dags/compact_documents"), json={"is_paused": True}, timeout=30)
    viewer.assert_refused(r, 403, "Forbidden")


@ONLY_V1
def test_basic_auth(af, api):
    url = api.url("/dags")
    wrong = requests.get(url, auth=(af["user"], "wrong"), timeout=30)
    # Airflow 2.11 (fab provider 1.5.4) refuses a wrong password, and no credentials, with
    # 403 Forbidden and no WWW-Authenticate (2.10 answered 401 Unauthorized).
    api.assert_refused(wrong, 403, "Forbidden")
    assert "WWW-Authenticate" not in wrong.headers
    assert requests.get(url, timeout=30).status_code == 403
    assert requests.get(url, auth=(af["user"], af["password"]), timeout=30).status_code == 200


@ONLY_V2
def test_wrong_password_401(af, api):
    r = requests.post(f"{af['url']}/auth/token", json={"username": af["user"], "password": "wrong"}, timeout=30)
    api.assert_refused(r, 401, "Invalid credentials")


@ONLY_V2
def test_no_token_401(af, api):
    r = requests.get(api.url("/dags"), timeout=30)
    api.assert_refused(r, 401, "Not authenticated")
    basic = requests.get(api.url("/dags"), auth=(af["user"], af["password"]), timeout=30)
    assert basic.status_code == 401  # no basic auth on v2


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _resign(token: str, secret: str, **claims) -> str:
    header, payload, _ = token.split(".")
    body = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    body.update(claims)
    signing_input = f"{header}.{_b64(json.dumps(body).encode())}"
    sig = hmac.new(secret.encode(), signing_input.encode(), hashlib.sha512).digest()
    return f"{signing_input}.{_b64(sig)}"


@ONLY_V2
def test_expired_token_401(api):
    now = int(time.time())
    expired = _resign(api.token, load_ctl().JWT_SECRET, iat=now - 7200, nbf=now - 7200, exp=now - 3600)
    r = requests.get(api.url("/dags"), headers={"Authorization": f"Bearer {expired}"}, timeout=30)
    api.assert_refused(r, 401, "Token Expired")
    # the same claims, re-signed but still valid, are accepted: only the expiry differs
    valid = _resign(api.token, load_ctl().JWT_SECRET, exp=now + 600)
    ok = requests.get(api.url("/dags"), headers={"Authorization": f"Bearer {valid}"}, timeout=30)
    assert ok.status_code == 200


@ONLY_V2
def test_forged_token_403(api):
    forged = _resign(api.token, "not-the-secret", exp=int(time.time()) + 600)
    r = requests.get(api.url("/dags"), headers={"Authorization": f"Bearer {forged}"}, timeout=30)
    api.assert_refused(r, 403, "Invalid JWT token")

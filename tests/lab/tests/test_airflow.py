"""The lab's Airflow 3 (REST API v2): the maintenance DAGs reach their intended states, the
failing task's log carries the dead-host error, and authentication behaves as documented.

Reads `lab.json`'s `airflow` entry (written from `tests/lab/airflow/ctl.py up`'s JSON line).
These tests only read; they never trigger, clear or pause anything.
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


class V2:
    def __init__(self, base: str, user: str, password: str):
        self.base = base.rstrip("/")
        self.s = requests.Session()
        r = self.s.post(f"{self.base}/auth/token", json={"username": user, "password": password}, timeout=30)
        assert r.status_code == 201, r.text
        self.token = r.json()["access_token"]
        self.s.headers["Authorization"] = f"Bearer {self.token}"

    def get(self, path: str, **params):
        r = self.s.get(f"{self.base}/api/v2{path}", params=params, timeout=60)
        assert r.status_code == 200, f"GET {path} -> {r.status_code} {r.text[:500]}"
        return r.json()

    def runs(self, dag_id: str) -> list[dict]:
        body = self.get(f"/dags/{dag_id}/dagRuns", limit=100, order_by="-run_after")
        assert body["total_entries"] == len(body["dag_runs"])
        return body["dag_runs"]

    def tis(self, dag_id: str, run_id: str) -> dict[str, dict]:
        body = self.get(f"/dags/{dag_id}/dagRuns/{q(run_id)}/taskInstances")
        return {t["task_id"]: t for t in body["task_instances"]}

    def log(self, dag_id: str, run_id: str, task_id: str, try_number: int = 1) -> dict:
        return self.get(f"/dags/{dag_id}/dagRuns/{q(run_id)}/taskInstances/{task_id}/logs/{try_number}",
                        full_content="true")


@pytest.fixture(scope="module")
def af(lab) -> dict:
    info = lab.get("airflow")
    assert info, "lab.json has no `airflow` entry: the lab was started without Airflow"
    assert info["api"] == "v2"
    return info


@pytest.fixture(scope="module")
def api(af) -> V2:
    return V2(af["url"], af["user"], af["password"])


# ------------------------------------------------------------------------------------ server


def test_version_and_health(af):
    v = requests.get(f"{af['url']}/api/v2/version", timeout=30)
    assert v.status_code == 200
    assert v.json()["version"] == af["version"]
    assert af["version"].startswith("3.")
    h = requests.get(f"{af['url']}/api/v2/monitor/health", timeout=30).json()
    for part in ("metadatabase", "scheduler", "dag_processor"):
        assert h[part]["status"] == "healthy", h
    # Airflow 3 removed /api/v1
    r = requests.get(f"{af['url']}/api/v1/version", timeout=30)
    assert r.status_code == 404


def _airflow_pids(lab, af) -> list[int]:
    pids = [p for name, p in (lab.get("pids") or {}).items() if name.startswith("airflow-")]
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


def test_listens_on_loopback_only(lab, af):
    pids = _airflow_pids(lab, af)
    assert pids, "no Airflow pids recorded"
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
        assert {t["name"] for t in dags[dag_id]["tags"]} == {"maintenance", table}
        assert dags[dag_id]["timetable_summary"] == "0 0 * * *"
        assert dags[dag_id]["is_paused"] is (dag_id == "expire_snapshots")
        assert dags[dag_id]["has_import_errors"] is False
    # the table tag alone finds the DAG that maintains it
    assert [d["dag_id"] for d in api.get("/dags", tags="iceberg.zoning.documents")["dags"]] == ["compact_documents"]


def assert_daily_history(runs: list[dict], state: str):
    assert len(runs) >= HISTORY_DAYS, f"{len(runs)} runs"
    assert {r["state"] for r in runs} == {state}, sorted({r["state"] for r in runs})
    assert {r["run_type"] for r in runs} == {"scheduled"}
    days = sorted(ts(r["logical_date"]) for r in runs)
    assert all(d.hour == d.minute == d.second == 0 for d in days)
    assert all(b - a == timedelta(days=1) for a, b in zip(days, days[1:])), days
    today = datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    assert days[-1] >= today - timedelta(days=1), f"latest logical date {days[-1]} is stale"
    assert days[-1] - days[0] >= timedelta(days=HISTORY_DAYS - 1)
    for r in runs:  # ran for real: started, ended, took time
        assert r["start_date"] and r["end_date"] and r["duration"] > 0
        assert r["triggered_by"] == "timetable"


def test_compact_documents_two_weeks_of_failures(api):
    runs = api.runs("compact_documents")
    assert_daily_history(runs, "failed")
    latest = runs[0]
    assert latest["state"] == "failed"
    assert latest["logical_date"] == max(r["logical_date"] for r in runs)
    failed = api.get("/dags", dag_id_pattern="compact_documents", last_dag_run_state="failed")
    assert [d["dag_id"] for d in failed["dags"]] == ["compact_documents"]
    stats = {s["state"]: s["count"] for s in api.get("/dagStats", dag_ids="compact_documents")["dags"][0]["stats"]}
    assert stats["failed"] == len(runs) and stats["success"] == 0


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


def test_compact_documents_log_names_the_dead_host(api):
    run = api.runs("compact_documents")[0]
    body = api.log("compact_documents", run["dag_run_id"], "compact")
    assert body["continuation_token"] is None  # finished task
    errors = [m for m in body["content"] if m.get("level") == "error" and m.get("error_detail")]
    assert len(errors) == 1, [m.get("event") for m in body["content"]]
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
    assert any("EXECUTE optimize" in (m.get("event") or "") for m in body["content"])


def test_compact_permits_reports_success(api):
    runs = api.runs("compact_permits")
    assert_daily_history(runs, "success")
    tis = api.tis("compact_permits", runs[0]["dag_run_id"])
    assert {k: v["state"] for k, v in tis.items()} == {"compact": "success", "report": "success"}
    body = api.log("compact_permits", runs[0]["dag_run_id"], "compact")
    # the bare except: no error or warning anywhere in the log of a compaction that never happened
    assert not [m for m in body["content"] if m.get("level") in ("error", "warning", "critical")]
    assert not any(m.get("error_detail") for m in body["content"])
    assert any("ALTER TABLE iceberg.zoning.permits EXECUTE optimize" in (m.get("event") or "")
               for m in body["content"])


def test_compact_parcels_succeeds(api):
    runs = api.runs("compact_parcels")
    assert_daily_history(runs, "success")
    tis = api.tis("compact_parcels", runs[0]["dag_run_id"])
    assert {k: v["state"] for k, v in tis.items()} == {"compact": "success", "report": "success"}
    assert tis["compact"]["operator"] == "SQLExecuteQueryOperator"
    body = api.log("compact_parcels", runs[0]["dag_run_id"], "compact")
    assert any("ALTER TABLE iceberg.zoning.parcels EXECUTE optimize" in (m.get("event") or "")
               for m in body["content"])


def test_expire_snapshots_paused_without_runs(api):
    dag = api.get("/dags/expire_snapshots")
    assert dag["is_paused"] is True
    assert api.get("/dags/expire_snapshots/dagRuns")["total_entries"] == 0


def test_import_errors_list_broken_dag(api):
    body = api.get("/importErrors")
    files = {e["filename"]: e for e in body["import_errors"]}
    assert "broken_dag.py" in files, list(files)
    assert files["broken_dag.py"]["bundle_name"] == "dags-folder"
    assert "ModuleNotFoundError: No module named 'lakehouse_maintenance_helpers'" in files["broken_dag.py"]["stack_trace"]


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
    assert json.loads(conns["trino_default"]["extra"])["catalog"] == "iceberg"


def _test_connection(api: V2, cid: str) -> dict:
    conn = api.get(f"/connections/{cid}")
    body = {k: conn[k] for k in ("connection_id", "conn_type", "host", "port", "login", "schema", "extra")}
    r = api.s.post(f"{api.base}/api/v2/connections/test", json=body, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()


def test_connection_test_live_trino(api):
    result = _test_connection(api, "trino_default")
    assert result == {"status": True, "message": "Connection successfully tested"}


def test_connection_test_dead_host(api):
    result = _test_connection(api, "trino_documents")
    assert result["status"] is False
    assert "trino-old.internal" in result["message"] and "port=8080" in result["message"]
    assert "Failed to resolve" in result["message"]


# ------------------------------------------------------------------------------------ auth


def test_wrong_password_401(af):
    r = requests.post(f"{af['url']}/auth/token", json={"username": af["user"], "password": "wrong"}, timeout=30)
    assert r.status_code == 401
    assert r.json() == {"detail": "Invalid credentials"}


def test_no_token_401(af):
    r = requests.get(f"{af['url']}/api/v2/dags", timeout=30)
    assert r.status_code == 401
    assert r.json() == {"detail": "Not authenticated"}
    basic = requests.get(f"{af['url']}/api/v2/dags", auth=(af["user"], af["password"]), timeout=30)
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


def test_expired_token_401(af, api):
    now = int(time.time())
    expired = _resign(api.token, load_ctl().JWT_SECRET, iat=now - 7200, nbf=now - 7200, exp=now - 3600)
    r = requests.get(f"{af['url']}/api/v2/dags", headers={"Authorization": f"Bearer {expired}"}, timeout=30)
    assert r.status_code == 401
    assert r.json() == {"detail": "Token Expired"}
    # the same claims, re-signed but still valid, are accepted: only the expiry differs
    valid = _resign(api.token, load_ctl().JWT_SECRET, exp=now + 600)
    ok = requests.get(f"{af['url']}/api/v2/dags", headers={"Authorization": f"Bearer {valid}"}, timeout=30)
    assert ok.status_code == 200


def test_forged_token_403(af, api):
    forged = _resign(api.token, "not-the-secret", exp=int(time.time()) + 600)
    r = requests.get(f"{af['url']}/api/v2/dags", headers={"Authorization": f"Bearer {forged}"}, timeout=30)
    assert r.status_code == 403
    assert r.json() == {"detail": "Invalid JWT token"}


def test_viewer_reads_but_cannot_pause(af):
    viewer = V2(af["url"], af["viewer_user"], af["viewer_password"])
    assert viewer.get("/dags/compact_documents")["dag_id"] == "compact_documents"
    r = viewer.s.patch(f"{viewer.base}/api/v2/dags/compact_documents", json={"is_paused": True}, timeout=30)
    assert r.status_code == 403
    assert r.json() == {"detail": "Forbidden"}

"""The lab's Airflow 2 (REST API v1, HTTP basic auth): the same facts as test_airflow.py through
the older API. Needs the lab started with `--airflow2` (as `cargo xtask test` does); without it
these tests fail.

Reads `lab.json`'s `airflow2` entry. These tests only read; they never trigger, clear or pause.
"""

from __future__ import annotations

import json
import urllib.parse
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import requests

from .test_airflow import DEAD_ENDPOINT, HISTORY_DAYS, TABLES, listening_addresses, q, ts


class V1:
    def __init__(self, base: str, user: str, password: str):
        self.base = base.rstrip("/")
        self.s = requests.Session()
        self.s.auth = (user, password)

    def get(self, path: str, **params):
        r = self.s.get(f"{self.base}/api/v1{path}", params=params, timeout=60)
        assert r.status_code == 200, f"GET {path} -> {r.status_code} {r.text[:500]}"
        return r.json()

    def runs(self, dag_id: str) -> list[dict]:
        body = self.get(f"/dags/{dag_id}/dagRuns", limit=100, order_by="-execution_date")
        assert body["total_entries"] == len(body["dag_runs"])
        return body["dag_runs"]

    def tis(self, dag_id: str, run_id: str) -> dict[str, dict]:
        body = self.get(f"/dags/{dag_id}/dagRuns/{q(run_id)}/taskInstances")
        return {t["task_id"]: t for t in body["task_instances"]}

    def log_text(self, dag_id: str, run_id: str, task_id: str, try_number: int = 1) -> str:
        r = self.s.get(f"{self.base}/api/v1/dags/{dag_id}/dagRuns/{q(run_id)}/taskInstances/{task_id}"
                       f"/logs/{try_number}", params={"full_content": "true"},
                       headers={"Accept": "text/plain"}, timeout=60)
        assert r.status_code == 200, r.text[:500]
        assert r.headers["Content-Type"].startswith("text/plain")
        return r.text


@pytest.fixture(scope="module")
def af2(lab) -> dict:
    info = lab.get("airflow2")
    assert info, "lab.json has no `airflow2` entry: start the lab with `--airflow2`"
    assert info["api"] == "v1"
    return info


@pytest.fixture(scope="module")
def api(af2) -> V1:
    return V1(af2["url"], af2["user"], af2["password"])


def test_version_and_health(af2):
    v = requests.get(f"{af2['url']}/api/v1/version", timeout=30)
    assert v.status_code == 200
    assert v.json()["version"] == af2["version"]
    assert af2["version"].startswith("2.")
    h = requests.get(f"{af2['url']}/api/v1/health", timeout=30).json()
    assert h["metadatabase"]["status"] == "healthy" and h["scheduler"]["status"] == "healthy", h
    assert requests.get(f"{af2['url']}/api/v2/version", timeout=30).status_code == 404


def test_listens_on_loopback_only(lab, af2):
    pids = [p for name, p in (lab.get("pids") or {}).items() if name.startswith("airflow2-")]
    pids += list((af2.get("pids") or {}).values())
    home = af2.get("home")
    if home and (Path(home) / "ctl-state.json").exists():
        pids += [p["pid"] for p in json.loads((Path(home) / "ctl-state.json").read_text())["procs"].values()]
    assert pids, "no Airflow 2 pids recorded"
    listening = listening_addresses(sorted(set(pids)))
    assert ("127.0.0.1", urllib.parse.urlsplit(af2["url"]).port) in listening
    assert all(addr == "127.0.0.1" for addr, _ in listening), listening


# ------------------------------------------------------------------------------------ auth


def test_basic_auth(af2):
    url = f"{af2['url']}/api/v1/dags"
    wrong = requests.get(url, auth=(af2["user"], "wrong"), timeout=30)
    assert wrong.status_code == 401
    assert wrong.headers["Content-Type"].startswith("application/problem+json")
    assert wrong.json()["title"] == "Unauthorized"
    assert requests.get(url, timeout=30).status_code == 401
    assert requests.get(url, auth=(af2["user"], af2["password"]), timeout=30).status_code == 200


def test_viewer_reads_but_cannot_pause(af2):
    viewer = V1(af2["url"], af2["viewer_user"], af2["viewer_password"])
    assert viewer.get("/dags/compact_documents")["dag_id"] == "compact_documents"
    r = viewer.s.patch(f"{viewer.base}/api/v1/dags/compact_documents", json={"is_paused": True}, timeout=30)
    assert r.status_code == 403


# ------------------------------------------------------------------------------------ DAGs


def test_maintenance_dags_tags_and_pause_state(api):
    dags = {d["dag_id"]: d for d in api.get("/dags", tags="maintenance", limit=100)["dags"]}
    assert set(dags) == set(TABLES)
    for dag_id, table in TABLES.items():
        assert {t["name"] for t in dags[dag_id]["tags"]} == {"maintenance", table}
        assert dags[dag_id]["schedule_interval"] == {"__type": "CronExpression", "value": "@daily"}
        assert dags[dag_id]["is_paused"] is (dag_id == "expire_snapshots")
        assert dags[dag_id]["is_active"] is True


def assert_daily_history(runs: list[dict], state: str):
    assert len(runs) >= HISTORY_DAYS, f"{len(runs)} runs"
    assert {r["state"] for r in runs} == {state}
    assert {r["run_type"] for r in runs} == {"scheduled"}
    assert {r["external_trigger"] for r in runs} == {False}
    days = sorted(ts(r["execution_date"]) for r in runs)
    assert all(r["execution_date"] == r["logical_date"] for r in runs)
    assert all(b - a == timedelta(days=1) for a, b in zip(days, days[1:])), days
    today = datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    # Airflow 2's @daily run for day D runs once D is over: the latest is yesterday's
    assert days[-1] >= today - timedelta(days=1), f"latest logical date {days[-1]} is stale"
    assert days[-1] - days[0] >= timedelta(days=HISTORY_DAYS - 1)
    for r in runs:
        assert r["start_date"] and r["end_date"]
        assert ts(r["data_interval_end"]) - ts(r["data_interval_start"]) == timedelta(days=1)


def test_compact_documents_two_weeks_of_failures(api):
    runs = api.runs("compact_documents")
    assert_daily_history(runs, "failed")
    assert runs[0]["state"] == "failed"
    assert runs[0]["execution_date"] == max(r["execution_date"] for r in runs)


def test_compact_documents_failing_task_and_log(api):
    runs = api.runs("compact_documents")
    for run in (runs[0], runs[-1]):
        tis = api.tis("compact_documents", run["dag_run_id"])
        assert {k: v["state"] for k, v in tis.items()} == {
            "check_table": "success", "compact": "failed", "report": "upstream_failed"}
    text = api.log_text("compact_documents", runs[0]["dag_run_id"], "compact")
    assert "ERROR - Task failed with exception" in text
    last = [ln for ln in text.splitlines() if ln.startswith("ConnectionError: ")]
    assert last, text[-2000:]
    assert DEAD_ENDPOINT in last[-1] and "Failed to resolve 'trino-old.internal'" in last[-1]
    assert "trino.exceptions.TrinoConnectionError: failed to execute" in text


def test_compact_permits_reports_success(api):
    runs = api.runs("compact_permits")
    assert_daily_history(runs, "success")
    tis = api.tis("compact_permits", runs[0]["dag_run_id"])
    assert {k: v["state"] for k, v in tis.items()} == {"compact": "success", "report": "success"}
    text = api.log_text("compact_permits", runs[0]["dag_run_id"], "compact")
    assert " ERROR - " not in text and "Traceback" not in text
    assert "ALTER TABLE iceberg.zoning.permits EXECUTE optimize" in text


def test_compact_parcels_succeeds(api):
    runs = api.runs("compact_parcels")
    assert_daily_history(runs, "success")
    tis = api.tis("compact_parcels", runs[0]["dag_run_id"])
    assert {k: v["state"] for k, v in tis.items()} == {"compact": "success", "report": "success"}
    assert tis["compact"]["operator"] == "SQLExecuteQueryOperator"


def test_expire_snapshots_paused_without_runs(api):
    assert api.get("/dags/expire_snapshots")["is_paused"] is True
    assert api.get("/dags/expire_snapshots/dagRuns")["total_entries"] == 0


def test_import_errors_list_broken_dag(api):
    errors = api.get("/importErrors")["import_errors"]
    broken = [e for e in errors if e["filename"].endswith("/broken_dag.py")]
    assert len(broken) == 1, [e["filename"] for e in errors]
    assert broken[0]["filename"].startswith("/")  # absolute on 2.x
    assert "ModuleNotFoundError: No module named 'lakehouse_maintenance_helpers'" in broken[0]["stack_trace"]


# ------------------------------------------------------------------------------------ connections


def test_connections_list_trino(lab, api):
    conns = {c["connection_id"]: c for c in api.get("/connections", limit=100)["connections"]}
    assert {"trino_default", "trino_documents", "trino_permits"} <= set(conns)
    trino = urllib.parse.urlsplit(lab["trino"]["url"])
    assert (conns["trino_default"]["host"], conns["trino_default"]["port"]) == (trino.hostname, trino.port)
    for cid in ("trino_documents", "trino_permits"):
        assert f"{conns[cid]['host']}:{conns[cid]['port']}" == DEAD_ENDPOINT


def _test_connection(api: V1, cid: str) -> dict:
    conn = api.get(f"/connections/{cid}")
    body = {k: conn[k] for k in ("connection_id", "conn_type", "host", "port", "login", "schema", "extra")}
    r = api.s.post(f"{api.base}/api/v1/connections/test", json=body, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()


def test_connection_test_live_trino(api):
    assert _test_connection(api, "trino_default") == {"status": True, "message": "Connection successfully tested"}


def test_connection_test_dead_host(api):
    result = _test_connection(api, "trino_documents")
    assert result["status"] is False
    assert "trino-old.internal" in result["message"] and "Failed to resolve" in result["message"]

"""The seed dashboard's query: `labctl dashboard` runs it on the real coordinator as user and
source `dashboard`, and the coordinator's own record holds it reading `zoning.documents`,
as floe reads that record (system.runtime.queries, then the query info's inputs)."""

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

# Imported as the package's modules, never by putting the lab's folder on sys.path: that
# folder holds the stand-in's `trino` package, which would hide the trino client the
# protocol tests import.
from .. import dashboard, realtrino

LAB_ROOT = Path(__file__).resolve().parents[1]


def test_labctl_dashboard_runs_the_query_the_coordinator_records_as_reading_documents(lab):
    url = lab["trino"]["url"]
    out = subprocess.run([sys.executable, str(LAB_ROOT / "labctl.py"), "dashboard", "--runs", "2"],
                         capture_output=True, text=True, timeout=600, env=os.environ.copy())
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stdout.splitlines() if line.startswith("lab: dashboard run ")]
    assert len(lines) == 2, out.stdout + out.stderr
    assert all(f" on {url}: " in line and " splits, " in line for line in lines), lines
    query_id = lines[-1].rsplit("(", 1)[1].rstrip(")")

    page = realtrino.statement(
        url, f"SELECT state, \"user\", source, query FROM system.runtime.queries WHERE query_id = '{query_id}'")
    assert page.get("error") is None, page.get("error")
    assert page["rows"] == [["FINISHED", dashboard.USER, dashboard.SOURCE, dashboard.QUERY]]

    # The query info lists the table among its inputs: what floe counts a run by.
    req = urllib.request.Request(f"{url}/v1/query/{query_id}", headers={"X-Trino-User": "floe"})
    with urllib.request.urlopen(req, timeout=30) as r:
        info = json.loads(r.read())
    inputs = {(i["catalogName"], i["schema"], i["table"]) for i in info["inputs"]}
    assert inputs == {("iceberg", "zoning", "documents")}
    assert info["queryStats"]["totalDrivers"] > 0


def test_a_failing_dashboard_query_names_the_server_and_trinos_error(lab):
    # the denied user is refused every statement: the error names the coordinator and the reason
    url = lab["trino"]["url"]
    page = realtrino.statement(url, dashboard.QUERY, user=lab["trino"]["denied_user"], source="dashboard")
    assert page["error"]["errorName"] == "PERMISSION_DENIED"
    bad = "http://127.0.0.1:9"  # discard port: nothing listens
    try:
        dashboard.run_once(bad, timeout=5)
    except OSError as e:
        assert "Connection refused" in str(e) or "refused" in str(e).lower()
    else:
        raise AssertionError("a run against a closed port succeeded")

"""`server_time`: a fixed server time per statement (not per HTTP request), scoped by user,
overlapping across statements in flight as on a real coordinator."""

from __future__ import annotations

import pytest
import time
from concurrent.futures import ThreadPoolExecutor

from .conftest import RawClient

# Reads and writes only what it makes itself (its own users, tables, servers and
# caches): runs beside floe's tests (see conftest.py).
pytestmark = pytest.mark.beside_suite


def timed(client: RawClient, sql: str = "SELECT 1") -> tuple[float, int]:
    t0 = time.monotonic()
    pages = client.run(sql)
    assert pages[-1]["stats"]["state"] == "FINISHED", pages[-1]
    return time.monotonic() - t0, len(pages)


def test_each_statement_pays_the_server_time_once(raw, control, user):
    control.faults(user, {"kind": "server_time", "ms": 600})
    for _ in range(3):
        took, pages = timed(raw)
        assert pages > 1, "several requests per statement"
        assert 0.6 <= took < 0.6 + 1.2, took
    state = control.fault_state_for(user)
    assert state[0]["fired"] == 3, state


def test_only_the_users_statements_pay_it(raw_factory, control, user):
    control.faults(user, {"kind": "server_time", "ms": 1500})
    other = raw_factory(user=f"{user}_other")
    took, _ = timed(other)
    assert took < 1.0, took


def test_statements_in_flight_overlap_their_server_time(raw_factory, lab, control, user):
    control.faults(user, {"kind": "server_time", "ms": 1000})
    clients = [RawClient(lab["stand_in"]["url"], user) for _ in range(8)]
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(timed, clients))
    wall = time.monotonic() - t0
    assert all(took >= 1.0 for took, _ in results), results
    # Eight statements on the lab's four workers: had each held a worker for its server
    # time, the last would end after two seconds.
    assert wall < 1.8, wall


def test_a_rule_without_a_number_is_refused(control, user):
    r = control.http.post(f"{control.base}/faults",
                          json={"user": user, "rules": [{"kind": "server_time"}]}, timeout=10)
    assert r.status_code == 400, (r.status_code, r.text)

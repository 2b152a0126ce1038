"""The seed incident's dashboard: the query a BI dashboard runs on `zoning.documents`, sent as
user and source `dashboard` through Trino's client protocol (standard library only).

The seed story starts with this query getting slow; the coordinator's own record of it
(`system.runtime.queries` and the query info it links) is what floe shows under the incident
and in `i`. labctl runs it a few times after start-up; `labctl dashboard` runs it again (once,
or every few seconds, as a dashboard that refreshes), so a compaction's gain shows in its next
run. The lab's documents table is small (a few thousand files of a few KB), so its times are
the lab's, not the seed story's 4m12s: what a compaction changes there is the splits it reads.
"""

from __future__ import annotations

import time

try:  # a module of the lab's package (its tests) or a script beside labctl
    from . import realtrino
except ImportError:
    import realtrino

USER = "dashboard"
SOURCE = "dashboard"
# Documents filed per district and day over the last month, the dashboard's one tile.
QUERY = ("SELECT district, date_trunc('day', filed_at) AS day, count(*) AS documents, "
         "sum(pages) AS pages FROM iceberg.zoning.documents "
         "WHERE filed_at > current_timestamp - INTERVAL '30' DAY "
         "GROUP BY district, date_trunc('day', filed_at) ORDER BY day DESC, district")


class DashboardError(Exception):
    """The dashboard's query failed: names the server and Trino's error."""


def run_once(url: str, timeout: float = 300) -> dict:
    """One run of the dashboard's query on the coordinator at `url`: its query id, rows,
    elapsed and CPU milliseconds and splits, from the final page's `stats`."""
    t0 = time.monotonic()
    page = realtrino.statement(url, QUERY, user=USER, source=SOURCE, timeout=timeout)
    err = page.get("error")
    if err is not None:
        raise DashboardError(f"the dashboard query on {url} failed: "
                             f"{err.get('errorName')}: {err.get('message')}")
    if page.get("nextUri"):
        raise DashboardError(f"the dashboard query on {url} did not finish within {timeout:.0f} s "
                             f"(query {page.get('id')})")
    stats = page.get("stats") or {}
    return {
        "query_id": page.get("id"),
        "rows": len(page["rows"]),
        "elapsed_ms": stats.get("elapsedTimeMillis"),
        "cpu_ms": stats.get("cpuTimeMillis"),
        "splits": stats.get("totalSplits"),
        "wall_s": round(time.monotonic() - t0, 3),
    }


def run(url: str, runs: int = 3, timeout: float = 300) -> list[dict]:
    """`runs` runs one after the other."""
    return [run_once(url, timeout) for _ in range(runs)]


def describe(r: dict) -> str:
    """`2.1 s, 2,008 splits, 70 rows (20261203_…)`"""
    elapsed = r.get("elapsed_ms")
    took = f"{elapsed / 1000:.1f} s" if elapsed is not None else f"{r['wall_s']:.1f} s wall"
    splits = f"{r['splits']:,} splits" if r.get("splits") is not None else "splits unknown"
    return f"{took}, {splits}, {r['rows']} rows ({r.get('query_id')})"

"""Daily compaction of iceberg.zoning.permits.

Written long ago with a bare `except:` around the compaction: the call fails (its
connection `trino_permits` points at the decommissioned `trino-old.internal:8080`), the
error is swallowed, and every run is reported as a success while the table was never
compacted.
"""

from __future__ import annotations

import logging
import os
from datetime import datetime, timedelta, timezone

try:  # Airflow 3
    from airflow.sdk import DAG, task
except ImportError:  # Airflow 2
    from airflow import DAG
    from airflow.decorators import task

from airflow.providers.trino.hooks.trino import TrinoHook

TABLE = "iceberg.zoning.permits"
CONN_ID = "trino_permits"
SQL = f"ALTER TABLE {TABLE} EXECUTE optimize"

log = logging.getLogger("airflow.task")


def history_start() -> datetime:
    """First logical date of the catch-up history (set by tests/lab/airflow/ctl.py): the last
    three days (a DAG that reports success needs no longer a record)."""
    value = os.environ.get("FLOE_LAB_HEALTHY_HISTORY_START")
    if value:
        return datetime.fromisoformat(value).replace(tzinfo=timezone.utc)
    today = datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    return today - timedelta(days=2)


with DAG(
    dag_id="compact_permits",
    description=f"Daily optimize of {TABLE}",
    doc_md=__doc__,
    schedule="@daily",
    start_date=history_start(),
    catchup=True,
    max_active_runs=2,
    tags=["maintenance", TABLE],
    default_args={"owner": "data-platform", "retries": 0},
):

    @task
    def compact() -> None:
        try:
            TrinoHook(trino_conn_id=CONN_ID).run(SQL)
        except:  # noqa: E722 — the incident: any error is swallowed
            pass
        log.info("compaction step finished")

    @task
    def report() -> None:
        log.info("%s compacted", TABLE)

    compact() >> report()

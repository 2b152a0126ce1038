"""Daily compaction of iceberg.zoning.documents — the lab's incident.

Its connection `trino_documents` still points at the decommissioned coordinator
`trino-old.internal:8080`, so every run fails in `compact` with the Trino client's
name-resolution error, and the table's small files pile up.
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

TABLE = "iceberg.zoning.documents"
CONN_ID = "trino_documents"
SQL = f"ALTER TABLE {TABLE} EXECUTE optimize(file_size_threshold => '96MB')"

log = logging.getLogger("airflow.task")


def history_start() -> datetime:
    """First logical date of the catch-up history (set by tests/lab/airflow/ctl.py)."""
    value = os.environ.get("FLOE_LAB_HISTORY_START")
    if value:
        return datetime.fromisoformat(value).replace(tzinfo=timezone.utc)
    today = datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    return today - timedelta(days=13)


with DAG(
    dag_id="compact_documents",
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
    def check_table() -> str:
        conn = TrinoHook.get_connection(CONN_ID)
        endpoint = f"{conn.host}:{conn.port}"
        log.info("target %s through connection %s (%s)", TABLE, CONN_ID, endpoint)
        return endpoint

    @task
    def compact(endpoint: str) -> None:
        log.info("running on %s: %s", endpoint, SQL)
        hook = TrinoHook(trino_conn_id=CONN_ID)
        try:
            hook.run(SQL)
        except Exception as exc:
            raise ConnectionError(
                f"optimize of {TABLE} failed: could not connect to Trino at {endpoint} "
                f"(connection {CONN_ID}): {exc}"
            ) from exc

    @task
    def report() -> None:
        log.info("optimize of %s committed", TABLE)

    compact(check_table()) >> report()

"""Daily compaction of iceberg.zoning.parcels, against the lab's Trino over TLS (`trino_tls`:
HTTPS, a user and password, the lab CA), as a production connection reaches a coordinator.

The healthy one: optimize really runs and commits.
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

from airflow.providers.common.sql.operators.sql import SQLExecuteQueryOperator

TABLE = "iceberg.zoning.parcels"
CONN_ID = "trino_tls"

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
    dag_id="compact_parcels",
    description=f"Daily optimize of {TABLE}",
    doc_md=__doc__,
    schedule="@daily",
    start_date=history_start(),
    catchup=True,
    max_active_runs=2,
    tags=["maintenance", TABLE],
    default_args={"owner": "data-platform", "retries": 0},
):

    compact = SQLExecuteQueryOperator(
        task_id="compact",
        conn_id=CONN_ID,
        # the table's write.target-file-size-bytes: files below it are rewritten (none, once healthy)
        sql=f"ALTER TABLE {TABLE} EXECUTE optimize(file_size_threshold => '64kB')",
    )

    @task
    def report() -> None:
        log.info("optimize of %s committed", TABLE)

    compact >> report()

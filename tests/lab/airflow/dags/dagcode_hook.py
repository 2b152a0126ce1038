"""The DAG code detector's lab DAG (tests/it/dag_code.rs): a TrinoHook bound to a name, and
a handler that only logs around its run. Never runs: no schedule, paused, tag `lab-dagcode`
(not `maintenance`), no history. Parsed by Airflow, read back through its REST API.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone

try:  # Airflow 3
    from airflow.sdk import DAG, task
except ImportError:  # Airflow 2
    from airflow import DAG
    from airflow.decorators import task

from airflow.providers.trino.hooks.trino import TrinoHook

TABLE = "iceberg.finance.budget"
CONN_ID = "trino_budget"

log = logging.getLogger("airflow.task")

with DAG(
    dag_id="dagcode_hook",
    schedule=None,
    start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    is_paused_upon_creation=True,
    tags=["lab-dagcode", TABLE],
    default_args={"owner": "data-platform", "retries": 2},
):

    @task
    def compact() -> None:
        hook = TrinoHook(trino_conn_id=CONN_ID)
        try:
            hook.run(f"ALTER TABLE {TABLE} EXECUTE optimize")
        except Exception as exc:
            log.warning("optimize of %s failed, will retry tomorrow: %s", TABLE, exc)

    @task
    def fresh() -> None:
        hook = TrinoHook(trino_conn_id=CONN_ID)
        hook.get_first(f'SELECT max(committed_at) FROM iceberg.finance."budget$snapshots"')

    compact() >> fresh()

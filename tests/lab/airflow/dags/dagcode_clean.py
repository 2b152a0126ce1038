"""The DAG code detector's lab DAG (tests/it/dag_code.rs): written as the seed's author
rewrote the compaction after the incident. Trino's error is raised, the task retries,
catch-up runs one at a time, a freshness check reads $snapshots: no finding. Never runs:
no schedule, paused, tag `lab-dagcode`, no history.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

try:  # Airflow 3
    from airflow.sdk import DAG, task
except ImportError:  # Airflow 2
    from airflow import DAG
    from airflow.decorators import task

from airflow.providers.trino.hooks.trino import TrinoHook
from trino.exceptions import TrinoQueryError

TABLE = "iceberg.zoning.parcels"
CONN_ID = "trino_default"

with DAG(
    dag_id="dagcode_clean",
    schedule=None,
    start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
    catchup=True,
    max_active_runs=1,
    is_paused_upon_creation=True,
    tags=["lab-dagcode", TABLE],
    default_args={"owner": "data-platform", "retries": 2, "retry_delay": timedelta(minutes=5)},
):

    @task
    def compact() -> None:
        hook = TrinoHook(trino_conn_id=CONN_ID)
        try:
            hook.run(f"ALTER TABLE {TABLE} EXECUTE optimize(file_size_threshold => '64kB')")
        except TrinoQueryError:
            raise

    @task
    def fresh() -> None:
        newest = TrinoHook(trino_conn_id=CONN_ID).get_first(
            'SELECT max(committed_at) FROM iceberg.zoning."parcels$snapshots"'
        )[0]
        if newest is None or datetime.now(timezone.utc) - newest > timedelta(days=2):
            raise RuntimeError(f"{TABLE} has not been compacted for two days")

    compact() >> fresh()

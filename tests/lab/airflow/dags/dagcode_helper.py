"""The DAG code detector's lab DAG (tests/it/dag_code.rs): a helper of the file reaches
Trino, another swallows around it (`except BaseException: return False`), the task calls
that one. Never runs: no schedule, paused, tag `lab-dagcode`, no history.
"""

from __future__ import annotations

from datetime import datetime, timezone

try:  # Airflow 3
    from airflow.sdk import DAG, task
except ImportError:  # Airflow 2
    from airflow import DAG
    from airflow.decorators import task

from airflow.providers.trino.hooks.trino import TrinoHook

TABLE = "iceberg.zoning.staging"


def trino_execute(sql: str) -> None:
    TrinoHook(trino_conn_id="trino_staging").run(sql)


def run_quietly(sql: str) -> bool:
    try:
        trino_execute(sql)
        return True
    except BaseException:
        return False


with DAG(
    dag_id="dagcode_helper",
    schedule=None,
    start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    is_paused_upon_creation=True,
    tags=["lab-dagcode", TABLE],
    default_args={"owner": "data-platform", "retries": 1},
):

    @task
    def compact() -> None:
        run_quietly(f"ALTER TABLE {TABLE} EXECUTE optimize")
        run_quietly(f'SELECT count(*) FROM iceberg.zoning."staging$snapshots"')

    compact()

"""Daily snapshot expiry of iceberg.audit.events (7-day retention).

Paused: nobody re-enabled it after a migration, so the table's snapshots keep piling up.
"""

from __future__ import annotations

from datetime import datetime, timezone

try:  # Airflow 3
    from airflow.sdk import DAG
except ImportError:  # Airflow 2
    from airflow import DAG

from airflow.providers.common.sql.operators.sql import SQLExecuteQueryOperator

TABLE = "iceberg.audit.events"

with DAG(
    dag_id="expire_snapshots",
    description=f"Daily expire_snapshots of {TABLE}",
    doc_md=__doc__,
    schedule="@daily",
    start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    is_paused_upon_creation=True,
    tags=["maintenance", TABLE],
    default_args={"owner": "data-platform", "retries": 0},
):
    SQLExecuteQueryOperator(
        task_id="expire_snapshots",
        conn_id="trino_default",
        sql=f"ALTER TABLE {TABLE} EXECUTE expire_snapshots(retention_threshold => '7d')",
    )

"""The DAG code detector's lab DAG (tests/it/dag_code.rs): the operator form, an operator
built and executed in a PythonOperator's callable, with `except Exception: pass` around it.
Never runs: no schedule, paused, tag `lab-dagcode`, no history.
"""

from __future__ import annotations

from datetime import datetime, timezone

from airflow import DAG

try:
    from airflow.providers.standard.operators.python import PythonOperator
except ImportError:  # Airflow 2
    from airflow.operators.python import PythonOperator

try:  # providers before 6: TrinoOperator
    from airflow.providers.trino.operators.trino import TrinoOperator
except ImportError:  # its successor runs the same SQL on the same connection
    from airflow.providers.common.sql.operators.sql import (
        SQLExecuteQueryOperator as TrinoOperator,
    )

TABLE = "iceberg.zoning.inspections"
CONN_ID = "trino_inspections"


def run_optimize(**context):
    op = TrinoOperator(
        task_id="optimize",
        conn_id=CONN_ID,
        sql=f"ALTER TABLE {TABLE} EXECUTE optimize",
    )
    try:
        op.execute(context)
    except Exception:
        pass


with DAG(
    dag_id="dagcode_operator",
    schedule=None,
    start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    is_paused_upon_creation=True,
    tags=["lab-dagcode", TABLE],
    default_args={"owner": "data-platform", "retries": 1},
):
    PythonOperator(task_id="compact", python_callable=run_optimize)

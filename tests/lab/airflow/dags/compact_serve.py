"""The lab's incident once more, private to floe serve's test (tests/it/serve.rs): the alerts
a real Prometheus raises from `floe serve`'s metrics on it, and their end after the fix.

`compact_documents` and its connection are shared: other tests rely on them failing, and
`compact_loop` is the loop test's. This DAG is the same story on a table and a connection of
its own, so the test can fix it, run it and see the alerts stop, then put everything back:

* its table, `iceberg.serve_af<major>.documents` (one per Airflow, both share the Trino
  catalog), is a clone of `zoning.documents` the test makes (the lab's `clone_table`);
* its connection `trino_serve` is (re)written by the test, pointing at a dead host first;
* no schedule and no history: the test triggers the runs it needs.

Without the table or the connection its runs fail, which is all a parse needs.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone

import airflow

try:  # Airflow 3
    from airflow.sdk import DAG, task
except ImportError:  # Airflow 2
    from airflow import DAG
    from airflow.decorators import task

from airflow.providers.trino.hooks.trino import TrinoHook

MAJOR = int(airflow.__version__.split(".")[0])
TABLE = f"iceberg.serve_af{MAJOR}.documents"
CONN_ID = "trino_serve"
SQL = f"ALTER TABLE {TABLE} EXECUTE optimize(file_size_threshold => '96MB')"

log = logging.getLogger("airflow.task")


with DAG(
    dag_id="compact_serve",
    description=f"Optimize of {TABLE} (the exporter test's own incident)",
    doc_md=__doc__,
    schedule=None,
    start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=1,
    # Not "maintenance": the seed's maintenance DAGs are counted by that tag.
    tags=["lab-serve", TABLE],
    default_args={"owner": "data-platform", "retries": 0},
):

    @task
    def compact() -> None:
        conn = TrinoHook.get_connection(CONN_ID)
        endpoint = f"{conn.host}:{conn.port}"
        log.info("running on %s: %s", endpoint, SQL)
        hook = TrinoHook(trino_conn_id=CONN_ID)
        try:
            hook.run(SQL)
        except Exception as exc:
            raise ConnectionError(
                f"optimize of {TABLE} failed: could not connect to Trino at {endpoint} "
                f"(connection {CONN_ID}): {exc}"
            ) from exc

    compact()

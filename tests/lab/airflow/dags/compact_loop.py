"""The lab's incident once more, private to the end-to-end loop test (tests/it/loop_lab.rs).

`compact_documents` and its connection are shared: other tests rely on them failing. This
DAG is the same story on a table and a connection of its own, so a test can fix it, run it
and see the table healthy, then put everything back:

* its table, `iceberg.loop_af<major>.documents` (one per Airflow, both share the Trino
  catalog), is a clone of `zoning.documents` the test makes (the lab's `clone_table`);
* its connection `trino_loop` is (re)written by the test, pointing at a dead host first;
* no schedule and no history: the test triggers the runs it needs.

Without the table or the connection its runs fail, which is all a parse needs.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timezone

import airflow

try:  # Airflow 3
    from airflow.sdk import DAG, task
except ImportError:  # Airflow 2
    from airflow import DAG
    from airflow.decorators import task

from airflow.providers.trino.hooks.trino import TrinoHook

MAJOR = int(airflow.__version__.split(".")[0])
TABLE = f"iceberg.loop_af{MAJOR}.documents"
CONN_ID = "trino_loop"
SQL = f"ALTER TABLE {TABLE} EXECUTE optimize(file_size_threshold => '96MB')"
# The optimize of the lab's clone takes a few seconds, less than one of floe's polls of a
# watched run on a loaded machine: once it has committed the task holds this long, so the
# test always sees it running (its log's tail) before it ends. A run on the dead host fails
# at once.
HOLD_S = 20

log = logging.getLogger("airflow.task")


with DAG(
    dag_id="compact_loop",
    description=f"Optimize of {TABLE} (the loop test's own incident)",
    doc_md=__doc__,
    schedule=None,
    start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=1,
    # Not "maintenance": the seed's maintenance DAGs are counted by that tag.
    tags=["lab-loop", TABLE],
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
        time.sleep(HOLD_S)

    @task
    def report() -> None:
        log.info("optimize of %s committed", TABLE)

    compact(check_table()) >> report()

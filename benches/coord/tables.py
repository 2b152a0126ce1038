"""The tables the coordinator-cost benchmark (benches/coord) measures, in a schema of its
own in the lab's real Trino: ten of 24 files (`small_00`..`small_09`: 8 identity
partitions, 3 commits), ten of about 1,900 (`k2_00`..`k2_09`: 32 buckets, 8 commits) and
one of about 20,700 (`k20`: 32 buckets, 18 commits). A 1 kB `target_max_file_size` makes
a writer roll a file per page, so one INSERT writes a few hundred files. Trino writes them,
so their `$entries` answers. About 5 minutes on 2 cores; `--drop` removes them.

usage: python tables.py URL [SCHEMA] [--drop]   (the lab venv's python; SCHEMA coord_bench)
"""

from __future__ import annotations

import sys
import time
from urllib.parse import urlsplit

import trino


def cursor(url: str, target: str | None = None):
    parts = urlsplit(url)
    sp = {"iceberg.target_max_file_size": target} if target else {}
    return trino.dbapi.connect(host=parts.hostname, port=parts.port, user="coord_setup",
                               http_scheme=parts.scheme, catalog="iceberg",
                               session_properties=sp).cursor()


def run(cur, sql: str) -> None:
    t = time.monotonic()
    cur.execute(sql)
    cur.fetchall()
    print(f"{time.monotonic() - t:6.2f}s {sql[:90]}", flush=True)


def rows(n: int, off: int) -> str:
    """n × 10,000 rows, ids from off × 10,000."""
    return (f"SELECT ({off} + a) * 10000 + b AS id, cast(b % 7 AS varchar) AS s, b * 1.5 AS v "
            f"FROM unnest(sequence(0, {n - 1})) t(a) CROSS JOIN unnest(sequence(1, 10000)) u(b)")


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--drop"]
    url = args[0]
    schema = f"iceberg.{args[1] if len(args) > 1 else 'coord_bench'}"
    cur = cursor(url)
    if "--drop" in sys.argv:
        cur.execute(f"SHOW TABLES FROM {schema}")
        for (t,) in cur.fetchall():
            run(cur, f'DROP TABLE {schema}."{t}"')
        run(cur, f"DROP SCHEMA {schema}")
        return
    run(cur, f"CREATE SCHEMA IF NOT EXISTS {schema}")
    small = ("SELECT x AS id, x % 8 AS p, cast(x AS varchar) AS s "
             "FROM unnest(sequence(1, 2000)) t(x)")
    for i in range(10):
        t = f"{schema}.small_{i:02d}"
        run(cur, f"CREATE TABLE {t} WITH (partitioning = ARRAY['p']) AS {small}")
        for _ in range(2):
            run(cur, f"INSERT INTO {t} {small}")
    tiny = cursor(url, "1kB")
    for i in range(10):
        t = f"{schema}.k2_{i:02d}"
        run(tiny, f"CREATE TABLE {t} WITH (partitioning = ARRAY['bucket(id, 32)']) AS {rows(10, 0)}")
        for k in range(1, 8):
            run(tiny, f"INSERT INTO {t} {rows(10, k * 10)}")
    t = f"{schema}.k20"
    run(tiny, f"CREATE TABLE {t} WITH (partitioning = ARRAY['bucket(id, 32)']) AS {rows(50, 0)}")
    for k in range(1, 18):
        run(tiny, f"INSERT INTO {t} {rows(50, k * 50)}")


if __name__ == "__main__":
    main()

"""The script an operator writes without floe: the official `trino` client, one table after
the other, the two natural questions per table (file stats from `$files`, the age of the
last compaction from `$snapshots`). The fleet benchmark runs it against the same lab, in
the same run, and compares its wall time with floe's first full scan.

For a Delta Lake catalog (`--delta`) the same two questions the Delta way: each table's
files from `$partitions` (an unpartitioned table has no row there on Trino 476: its files
from the hidden columns `"$path"` and `"$file_size"`), the last compaction from `$history`.

usage: python fleet_script.py URL USER CATALOG [LIMIT] [--delta]   (prints one JSON line)
"""

from __future__ import annotations

import json
import sys
import time
from urllib.parse import urlsplit

import trino

SMALL = int(0.75 * 128 * 1024 * 1024)


def main() -> None:
    delta = "--delta" in sys.argv
    args = [a for a in sys.argv[1:] if a != "--delta"]
    url, user, catalog = args[0:3]
    limit = int(args[3]) if len(args) > 3 else None
    parts = urlsplit(url)
    conn = trino.dbapi.connect(host=parts.hostname, port=parts.port, user=user,
                               http_scheme=parts.scheme, catalog=catalog)
    cur = conn.cursor()
    started = time.monotonic()
    cur.execute(f'SELECT table_schema, table_name FROM "{catalog}".information_schema.tables '
                "WHERE table_schema NOT IN ('information_schema', 'system') ORDER BY 1, 2")
    tables = cur.fetchall()[:limit]
    statements = 1
    report = []
    for schema, table in tables:
        name = f'"{catalog}"."{schema}"'
        if delta:
            cur.execute(f'SELECT sum(file_count), sum(total_size) FROM {name}."{table}$partitions"')
            files, size = cur.fetchall()[0]
            if files is None:
                cur.execute(f'SELECT count(*), sum(s), count_if(s < {SMALL}) FROM '
                            f'(SELECT DISTINCT "$path", "$file_size" AS s FROM {name}."{table}")')
                statements += 1
            small = None
            cur.execute(f"SELECT max(\"timestamp\") FROM {name}.\"{table}$history\" WHERE operation = 'OPTIMIZE'")
        else:
            cur.execute(f'SELECT count(*), sum(file_size_in_bytes), count_if(file_size_in_bytes < {SMALL}) '
                        f'FROM {name}."{table}$files" WHERE content = 0')
            files, size, small = cur.fetchall()[0]
            cur.execute(f"SELECT max(committed_at) FROM {name}.\"{table}$snapshots\" WHERE operation = 'replace'")
        last_compaction = cur.fetchall()[0][0]
        statements += 2
        report.append((schema, table, files, size, small, str(last_compaction)))
    wall = time.monotonic() - started
    print(json.dumps({"tables": len(report), "statements": statements, "wall_s": wall}))


if __name__ == "__main__":
    main()

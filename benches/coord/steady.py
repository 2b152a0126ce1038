"""What an open floe's steady statements cost the coordinator's process, one kind at a time.

The query stats leave out most of a statement's cost to the coordinator; this reads the
process's own CPU (/proc/<pid>/stat) over a minute of each: nothing sent (idle), twenty
reads of the coordinator's writes (`system.runtime.queries`, as a steady refresh sends
it), twenty change probes of five tables (`$metadata_log_entries`), twenty statements
asking both at once (one `UNION ALL`), twenty `SELECT 1`,
and idle again, one statement every three seconds. What a window spends over the idle
ones, divided by twenty, is a statement's cost; a coordinator still busy with what ran
before shows in the first idle window (its records are kept `query.min-expire-age`).

    python benches/coord/steady.py LAB_JSON CATALOG
"""

import json
import os
import sys
import time

import trino

N, GAP = 20, 3.0


def main():
    lab = json.load(open(sys.argv[1]))
    catalog = sys.argv[2]
    url, pid = lab["trino"]["url"], lab["trino"]["pid"]
    host, port = url.split("//")[1].rstrip("/").split(":")
    conn = trino.dbapi.connect(host=host, port=int(port), user="steady_cost", catalog=catalog)
    hz = os.sysconf("SC_CLK_TCK")

    def cpu_ms():
        text = open(f"/proc/{pid}/stat").read()
        fields = text[text.rindex(")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) * 1000 / hz

    cur = conn.cursor()
    cur.execute(
        f"SELECT table_schema, table_name FROM {catalog}.information_schema.tables "
        "WHERE table_schema <> 'information_schema' ORDER BY 1, 2 LIMIT 5"
    )
    tables = cur.fetchall()
    probe = " UNION ALL ".join(
        f'SELECT {i} AS i, max(timestamp) AS at, count(*) AS n FROM {catalog}."{s}"."{t}$metadata_log_entries"'
        for i, (s, t) in enumerate(tables)
    )
    writes = (
        "SELECT query, to_unixtime(\"end\") AS ended FROM system.runtime.queries "
        "WHERE state = 'FINISHED' AND \"end\" > from_unixtime(%.3f) "
        "AND regexp_like(query, '^\\s*(?i)(insert|merge|update|delete|alter|create|truncate|drop|call)\\b')"
        % (time.time() - 120)
    )
    # the two in one statement: the writes' rows beside the probe's, typed alike
    merged = (
        writes.replace(
            "SELECT query, to_unixtime(\"end\") AS ended",
            "SELECT -1 AS i, query, to_unixtime(\"end\") AS ended, "
            "CAST(NULL AS timestamp(6) with time zone) AS at, CAST(NULL AS bigint) AS n",
        )
        + " UNION ALL "
        + " UNION ALL ".join(
            f'SELECT {i}, NULL, NULL, max(timestamp), count(*) FROM {catalog}."{s}"."{t}$metadata_log_entries"'
            for i, (s, t) in enumerate(tables)
        )
    )
    shapes = [
        ("idle", None),
        ("writes read", writes),
        ("probe of 5", probe),
        ("both in one", merged),
        ("SELECT 1", "SELECT 1"),
        ("idle", None),
    ]
    for name, sql in shapes:
        c0, t0 = cpu_ms(), time.time()
        for k in range(N):
            if sql:
                cur.execute(sql)
                cur.fetchall()
            time.sleep(max(0.0, t0 + (k + 1) * GAP - time.time()))
        print(f"{name:12s} {cpu_ms() - c0:8.0f} ms in {time.time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()

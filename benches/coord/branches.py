"""What a statement and each UNION ALL branch of it cost the coordinator's process.

The query stats leave out most of what a statement costs a coordinator (its tasks'
HTTP management, the code it compiles, garbage collection): this reads the process's
own CPU, thread by thread (/proc/<pid>/task), around a run of statements of one shape
over a fleet's tables, one statement after the other.

    python benches/coord/branches.py LAB_JSON CATALOG [SHAPE:TABLES_A_STATEMENT ...]

SHAPE is one of `snapshots` (a survey's $snapshots branch), `properties` (its
$properties branch), `partitions` (`$partitions`' counts), `survey` (both, as a fleet's survey sends them) and `files` (a
file read's $files branch); the first 300 tables the catalog lists are read, in
statements of TABLES_A_STATEMENT tables.
"""

import json
import os
import re
import sys
import time

import trino


def threads(pid):
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            text = open(f"/proc/{pid}/task/{tid}/stat").read()
        except OSError:
            continue
        name = text[text.index("(") + 1 : text.rindex(")")]
        fields = text[text.rindex(")") + 2 :].split()
        out[tid] = (name, int(fields[11]) + int(fields[12]))
    return out


def by_group(before, after):
    groups = {}
    for tid, (name, ticks) in after.items():
        spent = ticks - before.get(tid, (name, 0))[1]
        key = re.sub(r"[-#\s]*\d+", "#", name)
        groups[key] = groups.get(key, 0) + spent
    return groups


def branches(shape, i, ref):
    snap = f'SELECT {i} AS i, snapshot_id, committed_at, operation, parent_id, summary, CAST(NULL AS varchar) AS prop, CAST(NULL AS varchar) AS value FROM {ref("snapshots")}'
    props = f"SELECT {i}, NULL, NULL, NULL, NULL, NULL, key, value FROM {ref('properties')} WHERE key IN ('current-snapshot-id', 'write.target-file-size-bytes')"
    files = (
        f"SELECT {i} AS i, b.* FROM (SELECT count(*) AS files, count_if(f.file_size_in_bytes < 100663296) AS small_files, "
        f"sum(f.file_size_in_bytes) AS bytes FROM {ref('files')} f WHERE f.content = 0 GROUP BY f.partition) b"
    )
    partitions = f"SELECT {i} AS i, file_count, total_size FROM {ref('partitions')}"
    return {
        "partitions": [partitions],
        "snapshots": [snap],
        "properties": [props.replace("NULL, NULL, NULL, NULL, NULL, ", "")],
        "survey": [snap, props],
        "files": [files],
    }[shape]


def main():
    lab = json.load(open(sys.argv[1]))["trino"]
    catalog = sys.argv[2]
    runs = sys.argv[3:] or ["snapshots:1", "snapshots:10", "survey:10", "files:10"]
    host, port = lab["url"].removeprefix("http://").split(":")
    conn = trino.dbapi.connect(host=host, port=int(port), user="branches", catalog=catalog)
    cur = conn.cursor()
    cur.execute(f'SELECT table_schema, table_name FROM "{catalog}".system.iceberg_tables')
    tables = sorted(cur.fetchall())[:300]
    for run in runs:
        shape, per = run.split(":")
        per = int(per)
        before, t0, statements = threads(lab["pid"]), time.time(), 0
        for start in range(0, len(tables), per):
            parts = []
            for i, (s, t) in enumerate(tables[start : start + per]):
                ref = lambda m, s=s, t=t: f'"{catalog}"."{s}"."{t}${m}"'
                parts += branches(shape, i, ref)
            cur = conn.cursor()
            cur.execute("\nUNION ALL\n".join(parts))
            cur.fetchall()
            statements += 1
        wall = time.time() - t0
        groups = by_group(before, threads(lab["pid"]))
        total = sum(groups.values()) / 100
        top = sorted(groups.items(), key=lambda kv: -kv[1])[:6]
        print(
            f"{shape}, {per} a statement: {statements} statements, {wall:.1f} s, "
            f"process CPU {total:.1f} s ({total / len(tables) * 1000:.0f} ms a table): "
            + ", ".join(f"{k} {v / 100:.1f}" for k, v in top),
            flush=True,
        )


if __name__ == "__main__":
    main()

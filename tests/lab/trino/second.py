"""A second cluster for the lab: a Trino-protocol stand-in with an Iceberg catalog of its own.

    PYTHONPATH=tests python -m lab.trino.second --from WAREHOUSE_DIR --dir DIR

Copies `WAREHOUSE_DIR/catalog.db` (SQLite's online backup: a consistent copy while the
first cluster commits) to `DIR/catalog.db` and serves it as catalog `iceberg` on one plain
listener (insecure auth, version 480). The copy's tables point at the same metadata files,
so both clusters start with the same tables under the same names; from then on each
catalog moves its own pointers: a commit on one (an optimize) writes new files and a new
metadata file and changes only its own catalog, so the other cluster's table keeps its
snapshot. Writes `DIR/state.json` once it listens (the server's `state_file`) and runs
until SIGTERM (this process becomes the server: its PID is the one to stop).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
from pathlib import Path


def copy_catalog(src: Path, dst: Path) -> None:
    """SQLite's online backup of `src` into `dst` (replaced)."""
    dst.unlink(missing_ok=True)
    with sqlite3.connect(f"file:{src}?mode=ro", uri=True, timeout=30) as s, sqlite3.connect(dst) as d:
        s.backup(d)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--from", dest="source", required=True, help="the first cluster's warehouse dir")
    ap.add_argument("--dir", required=True, help="the second cluster's dir (created)")
    args = ap.parse_args()
    source = Path(args.source).resolve() / "catalog.db"
    if not source.exists():
        sys.exit(f"second: {source} not found")
    d = Path(args.dir).resolve()
    d.mkdir(parents=True, exist_ok=True)
    copy_catalog(source, d / "catalog.db")
    config = {
        "environment": "lab-second",
        "time_zone": "Europe/Vienna",
        "page_size": 1000,
        "client_timeout_s": 300,
        "worker_threads": 4,
        "engine": {"kind": "real", "catalogs": {"iceberg": str(d)}},
        "tls": {"dir": str(d / "tls")},
        "auth": {"users": {}, "jwt_secret": os.urandom(32).hex(), "oauth2_user": "carol"},
        "access": {"denied_users": []},
        "listeners": [{"name": "plain", "port": 0, "version": 480, "auth": ["insecure"], "control": True}],
        "state_file": str(d / "state.json"),
    }
    cfg = d / "config.json"
    cfg.write_text(json.dumps(config, indent=2))
    (d / "state.json").unlink(missing_ok=True)
    os.execv(sys.executable, [sys.executable, "-m", "lab.trino.server", "--config", str(cfg)])


if __name__ == "__main__":
    main()

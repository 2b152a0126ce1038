"""The real Trino coordinators of the lab (standard library only; used by labctl).

A single-node Trino (coordinator and worker in one JVM) over the lab's Iceberg warehouses,
read through Iceberg's JDBC catalog on the same SQLite `catalog.db` that pyiceberg's
`SqlCatalog` writes: the scenario generators keep writing backdated histories, the real
Trino reads them and really optimizes, expires and removes orphans, and the lab's stand-in
server sees what Trino committed. The lab runs one per version asked for (476 and 483, see
`trinodist`, where each comes from), all over the same catalogs.

Each listens on two ports: plain HTTP with insecure authentication (`X-Trino-User`), what
most tests read, and HTTPS with its own CA and Trino's password file authenticator, as
production runs (Trino takes passwords over HTTPS only). A lab's configuration and data
live in `<lab dir>/trino-real-<version>/`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

try:  # a module of the lab's package (its tests) or a script beside labctl
    from .trinodist import TrinoSetupError  # noqa: F401  (re-exported: labctl catches it here)
except ImportError:
    from trinodist import TrinoSetupError  # noqa: F401

HEAP = "3G"
# The benchmarks' lab (the scale catalog): a coordinator that keeps a run's history while
# each phase reads its statements back (measured: two runs at 300 and 1,000 tables send
# ~4,700 statements, ~4 GB of query history at 30 minutes kept, which the 3 GB heap spent
# its time collecting; the second run's figures were the garbage collector's).
BENCH_HEAP = "6G"
BENCH_MIN_EXPIRE_AGE = "5m"
# Users whose name starts so cannot read the `system` catalog (its catalog list, its
# query record), as a cluster's access control may deny them: everything else they may.
NO_SYSTEM_PREFIX = "nosystem_"
# Users whose name starts so cannot see the `iceberg` catalog: to them the cluster has
# none of that name (what a cluster whose Iceberg catalog is named otherwise looks like).
NO_ICEBERG_PREFIX = "noiceberg_"
# Users of the HTTPS listener's password file (PBKDF2, as Trino's file authenticator reads it).
TLS_USERS = {"floe_tls": "floe-tls-secret", "etl_tls": "etl-tls-secret"}
PBKDF2_ITERATIONS = 1000


# ---------------------------------------------------------------------------- configuration
def catalog_properties(scenario_dir: Path, version: str) -> str:
    d = Path(scenario_dir).resolve()
    lines = [
        "connector.name=iceberg",
        "iceberg.catalog.type=jdbc",
        "iceberg.jdbc-catalog.driver-class=org.sqlite.JDBC",
        f"iceberg.jdbc-catalog.connection-url=jdbc:sqlite:{d / 'catalog.db'}",
        # the catalog name pyiceberg's SqlCatalog writes (lab/scenarios/catalog.py)
        "iceberg.jdbc-catalog.catalog-name=lab",
        f"iceberg.jdbc-catalog.default-warehouse-dir=file://{d / 'warehouse'}",
        # renamed in 481 (the old name still works there, with a warning)
        "fs.local.enabled=true" if int(version) >= 481 else "fs.native-local.enabled=true",
        "local.location=/",
        # Trino's own default minimum retentions (7d) stay: a shorter retention fails with
        # INVALID_PROCEDURE_ARGUMENT unless the session property lowers it, as on a cluster
        "iceberg.register-table-procedure.enabled=true",
    ]
    if int(version) >= 460:
        # pyiceberg writes the V0 layout (no iceberg_type column)
        lines.append("iceberg.jdbc-catalog.schema-version=V0")
    return "\n".join(lines) + "\n"


# The catalog of the Delta Lake tables, on a server that has the connector (476: see
# trinodist's docstring).
DELTA_CATALOG = "delta"
DELTA_PLUGIN_DIR = "delta-lake"


def delta_catalog_properties(s3: dict, version: str) -> str:
    """The Delta Lake catalog over the lab's object store (`s3`: {endpoint, bucket,
    access_key, secret_key, region}; see objectstore.py), its file metastore there too;
    Trino's own defaults otherwise (vacuum's 7-day minimum retention)."""
    return "\n".join([
        "connector.name=delta_lake",
        "hive.metastore=file",
        f"hive.metastore.catalog.dir=s3://{s3['bucket']}/metastore",
        "fs.native-s3.enabled=true",
        f"s3.endpoint={s3['endpoint']}",
        f"s3.region={s3['region']}",
        "s3.path-style-access=true",
        f"s3.aws-access-key={s3['access_key']}",
        f"s3.aws-secret-key={s3['secret_key']}",
        "delta.register-table-procedure.enabled=true",
        # S3 without a lock service: Trino's writes take the lock-file synchronizer
        "delta.enable-non-concurrent-writes=true",
    ]) + "\n"


# The Delta table Trino itself writes at every start (the delta-rs ones are uploaded):
# partitioned, deletion vectors on, a compaction between its loads and a DELETE after
# them (the DELETE writes deletion vectors, which Trino 476's vacuum refuses).
TRINO_DELTA_TABLE = "sales.returns"


def trino_delta_statements() -> list[str]:
    regions = ["emea", "amer", "apac", "latam"]
    out = [f"CREATE TABLE {TRINO_DELTA_TABLE} (return_id bigint, region varchar, amount double) "
           "WITH (partitioned_by = ARRAY['region'], deletion_vectors_enabled = true)"]
    n = 0

    def load(k: int) -> str:
        nonlocal n
        # each load: three rows in each of two regions, one file a region
        rows = ", ".join(f"({n + i}, '{regions[(k + i % 2) % 4]}', {10 + (n + i) % 90}.5)"
                         for i in range(6))
        n += 6
        return f"INSERT INTO {TRINO_DELTA_TABLE} VALUES {rows}"

    out += [load(k) for k in range(6)]
    out.append(f"ALTER TABLE {TRINO_DELTA_TABLE} EXECUTE optimize")
    out += [load(k) for k in range(6, 14)]
    out.append(f"DELETE FROM {TRINO_DELTA_TABLE} WHERE return_id % 7 = 0")
    return out


def delta_statements(s3: dict, tables: dict) -> list[str]:
    """Register the delta-rs tables (`tables`: expected.json's, by `schema.table`, uploaded
    under `s3://<bucket>/warehouse/`) in the catalog, then write Trino's own."""
    out = []
    schemas = sorted({k.split(".")[0] for k in tables} | {TRINO_DELTA_TABLE.split(".")[0]})
    for schema in schemas:
        out.append(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    for name in sorted(tables):
        schema, table = name.split(".")
        out.append(f"CALL system.register_table(schema_name => '{schema}', table_name => '{table}', "
                   f"table_location => 's3://{s3['bucket']}/warehouse/{schema}/{table}')")
    return out + trino_delta_statements()


def create_delta_tables(url: str, s3: dict, tables: dict) -> list[str]:
    """Run `delta_statements` on the real Trino; the statements that failed, with
    Trino's error."""
    failed = []
    for sql in delta_statements(s3, tables):
        page = statement_when_scheduled(url, sql, DELTA_CATALOG)
        err = page.get("error")
        if err:
            failed.append(f"{sql[:120]}: {err.get('errorName')}: {err.get('message')}")
    return failed


def pbkdf2_entry(password: str) -> str:
    """A password file's hash as Trino's file authenticator reads it: `iterations:salt:hash`,
    PBKDF2 with HMAC-SHA1, hex."""
    salt = secrets.token_bytes(16)
    digest = hashlib.pbkdf2_hmac("sha1", password.encode(), salt, PBKDF2_ITERATIONS, 32)
    return f"{PBKDF2_ITERATIONS}:{salt.hex()}:{digest.hex()}"


def write_tls(etc: Path, cert_file: str, key_file: str, users: dict[str, str]) -> dict:
    """The HTTPS listener's keystore (Trino reads a PEM file holding the key and the chain),
    the password file and the authenticator's properties."""
    keystore = etc / "tls" / "keystore.pem"
    keystore.parent.mkdir(parents=True, exist_ok=True)
    keystore.write_bytes(Path(key_file).read_bytes() + Path(cert_file).read_bytes())
    os.chmod(keystore, 0o600)
    password_file = etc / "password.db"
    password_file.write_text("".join(f"{u}:{pbkdf2_entry(p)}\n" for u, p in users.items()))
    os.chmod(password_file, 0o600)
    (etc / "password-authenticator.properties").write_text(
        f"password-authenticator.name=file\nfile.password-file={password_file}\n")
    return {"keystore": str(keystore), "password_file": str(password_file)}


def write_config(etc: Path, data: Path, port: int, catalogs: dict[str, str], version: str,
                 denied_user: str, time_zone: str, heap: str = HEAP,
                 min_expire_age: str = "30m", tls: dict | None = None,
                 delta_s3: dict | None = None) -> None:
    """A coordinator's `etc`: plain HTTP on `port`; with `tls` ({https_port, cert_file,
    key_file, users}) also HTTPS with the password file authenticator, HTTP keeping insecure
    authentication for the tests that read it."""
    shutil.rmtree(etc, ignore_errors=True)
    (etc / "catalog").mkdir(parents=True)
    data.mkdir(parents=True, exist_ok=True)
    (etc / "node.properties").write_text(
        "node.environment=lab\nnode.id=lab-1\n"
        f"node.data-dir={data}\nnode.bind-ip=127.0.0.1\nnode.internal-address=127.0.0.1\n")
    (etc / "jvm.config").write_text("\n".join([
        "-server",
        f"-Xmx{heap}",
        "-XX:+UseG1GC",
        "-XX:+ExitOnOutOfMemoryError",
        "-XX:-OmitStackTraceInFastThrow",
        "-XX:ReservedCodeCacheSize=256M",
        "-Djdk.attach.allowAttachSelf=true",
        "-Dfile.encoding=UTF-8",
        "-XX:+EnableDynamicAgentLoading",
        # the coordinator's default session zone: a client that forgets X-Trino-Time-Zone
        # sees it in every `timestamp with time zone` (as with the stand-in)
        f"-Duser.timezone={time_zone}",
        f"-Djava.io.tmpdir={data / 'tmp'}",
    ]) + "\n")
    (data / "tmp").mkdir(exist_ok=True)
    (etc / "config.properties").write_text("\n".join([
        "coordinator=true",
        "node-scheduler.include-coordinator=true",
        f"http-server.http.port={port}",
        f"discovery.uri=http://127.0.0.1:{port}",
        "query.max-memory=1GB",
        # The coordinator's query history, for the tests and for floe's own reading of it:
        # every query of the last 30 minutes (longer than any test story), full details for
        # the newest 100 (Trino's default). Each query kept holds its plan (measured on 476:
        # ~0.4 MB of heap for a one-table metadata statement, ~4 MB for a ten-table UNION
        # ALL, after a full GC): a two-hour history of the suite and the benchmarks filled
        # the 3 GB heap with back-to-back full GCs.
        "query.max-history=100",
        f"query.min-expire-age={min_expire_age}",
        *(tls_properties(etc, tls) if tls else []),
    ]) + "\n")
    (etc / "log.properties").write_text("io.trino=INFO\n")
    for name, path in catalogs.items():
        (etc / "catalog" / f"{name}.properties").write_text(catalog_properties(Path(path), version))
    if delta_s3 is not None:
        (etc / "catalog" / f"{DELTA_CATALOG}.properties").write_text(
            delta_catalog_properties(delta_s3, version))
    # the denied user: every statement fails PERMISSION_DENIED "Access Denied: Cannot execute query"
    rules = {
        "queries": [
            {"user": re.escape(denied_user), "allow": []},
            {"allow": ["execute", "kill", "view"]},
        ],
        "catalogs": [
            {"user": re.escape(NO_SYSTEM_PREFIX) + ".*", "catalog": "system", "allow": "none"},
            {"user": re.escape(NO_ICEBERG_PREFIX) + ".*", "catalog": "iceberg", "allow": "none"},
            {"allow": "all"},
        ],
        "schemas": [{"owner": True}],
        "tables": [{"privileges": ["SELECT", "INSERT", "DELETE", "UPDATE", "OWNERSHIP", "GRANT_SELECT"]}],
        "system_session_properties": [{"allow": True}],
        "catalog_session_properties": [{"allow": True}],
        "procedures": [{"privileges": ["EXECUTE"]}],
        "functions": [{"privileges": ["EXECUTE", "GRANT_EXECUTE", "OWNERSHIP"]}],
    }
    (etc / "rules.json").write_text(json.dumps(rules, indent=2))
    (etc / "access-control.properties").write_text(
        f"access-control.name=file\nsecurity.config-file={etc / 'rules.json'}\n")


def tls_properties(etc: Path, tls: dict) -> list[str]:
    files = write_tls(etc, tls["cert_file"], tls["key_file"], tls["users"])
    return [
        "http-server.https.enabled=true",
        f"http-server.https.port={tls['https_port']}",
        f"http-server.https.keystore.path={files['keystore']}",
        "http-server.authentication.type=PASSWORD",
        # the plain listener keeps insecure authentication (X-Trino-User), as before
        "http-server.authentication.allow-insecure-over-http=true",
        # required by Trino once an authenticator is configured
        f"internal-communication.shared-secret={secrets.token_hex(32)}",
    ]


def statement(url: str, sql: str, user: str = "floe", timeout: float = 60, catalog: str | None = None,
              source: str = "floe-lab") -> dict:
    """Run one statement through the client protocol; the final page (with `error` on failure)
    and every row under `rows`."""
    headers = {"X-Trino-User": user, "X-Trino-Source": source}
    if catalog:
        headers["X-Trino-Catalog"] = catalog
    req = urllib.request.Request(url + "/v1/statement", data=sql.encode(), method="POST", headers=headers)
    deadline = time.monotonic() + timeout
    with urllib.request.urlopen(req, timeout=10) as r:
        page = json.loads(r.read())
    rows = list(page.get("data") or [])
    while page.get("nextUri") and time.monotonic() < deadline:
        with urllib.request.urlopen(urllib.request.Request(page["nextUri"], headers={"X-Trino-User": user}),
                                    timeout=30) as r:
            page = json.loads(r.read())
        rows.extend(page.get("data") or [])
    page["rows"] = rows
    return page


def wait_ready(url: str, proc, log: Path, timeout_s: float = 300) -> dict:
    """Until `/v1/info` says started and a first statement runs (a fresh coordinator answers
    "No nodes available" for a moment after it says started)."""
    deadline = time.monotonic() + timeout_s
    info = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise TrinoSetupError(f"the real Trino exited ({proc.returncode}); see {log}:\n"
                                  + log.read_text(errors="replace")[-4000:])
        try:
            with urllib.request.urlopen(url + "/v1/info", timeout=2) as r:
                info = json.loads(r.read())
        except (urllib.error.URLError, OSError, ValueError):
            info = None
        if info is not None and not info.get("starting", True):
            try:
                page = statement(url, "SELECT count(*) FROM system.runtime.nodes WHERE state = 'active'",
                                 timeout=20)
                if page.get("error") is None and page["rows"] and page["rows"][0][0] >= 1:
                    return info
            except (urllib.error.URLError, OSError, ValueError):
                pass
        time.sleep(0.25)
    raise TrinoSetupError(f"the real Trino did not become ready within {timeout_s:.0f} s; see {log}:\n"
                          + log.read_text(errors="replace")[-3000:])


def rss_bytes(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


# ---------------------------------------------------------------------------- layouts only Trino writes
# The `layouts` catalog: tables created and written through the real Trino, for the
# partition layouts and table shapes pyiceberg does not write. Several small INSERTs per
# table, so each partition holds a few small files. Generated once and cached like a
# scenario (see labctl `ensure_layouts`).
def _rows(n: int, day0: int = 1) -> str:
    vals = []
    for i in range(n):
        d = day0 + i % 3
        vals.append(
            f"({i}, 'name-{i % 5}', DATE '2026-11-{d:02d}', TIMESTAMP '2026-11-{d:02d} {i % 24:02d}:15:00.123456', "
            f"TIMESTAMP '2026-11-{d:02d} {i % 24:02d}:15:00.123456 UTC', {'true' if i % 2 else 'false'}, "
            f"DECIMAL '{(i % 4) * 10}.50', '{['east', 'west', 'north'][i % 3]}')")
    return ", ".join(vals)


LAYOUT_COLUMNS = ("id bigint, name varchar, d date, ts timestamp(6), tstz timestamp(6) with time zone, "
                  "flag boolean, amount decimal(10, 2), region varchar")

# (table, WITH properties); every table gets INSERTS writes of ROWS rows
LAYOUT_TABLES = [
    ("bucketed", "partitioning = ARRAY['bucket(id, 4)']"),
    ("truncated", "partitioning = ARRAY['truncate(name, 6)']"),
    ("monthly", "partitioning = ARRAY['month(ts)']"),
    ("hourly", "partitioning = ARRAY['hour(tstz)']"),
    ("yearly", "partitioning = ARRAY['year(d)']"),
    ("by_date", "partitioning = ARRAY['d']"),
    ("by_flag", "partitioning = ARRAY['flag']"),
    ("by_amount", "partitioning = ARRAY['amount']"),
    ("by_ts6", "partitioning = ARRAY['ts']"),
    ("by_tstz6", "partitioning = ARRAY['tstz']"),
    ("by_region_day", "partitioning = ARRAY['region', 'day(tstz)']"),
    ("sorted", "partitioning = ARRAY['region'], sorted_by = ARRAY['id']"),
    ("v1", "format_version = 1, partitioning = ARRAY['region']"),
    ("unpartitioned", "format_version = 2"),
    ("evolved", "partitioning = ARRAY['region']"),
    ("unpartitioned_now", "partitioning = ARRAY['region']"),
    ("with_deletes", "format_version = 2, partitioning = ARRAY['region']"),
    ('"Mixed Case ""q"" name"', "partitioning = ARRAY['region']"),
]
INSERTS = 4
ROWS = 12


def layout_statements(schema: str = "zoo") -> list[str]:
    out = [f"CREATE SCHEMA IF NOT EXISTS {schema}"]
    for table, props in LAYOUT_TABLES:
        out.append(f"CREATE TABLE {schema}.{table} ({LAYOUT_COLUMNS}) WITH ({props})")
        for k in range(INSERTS):
            out.append(f"INSERT INTO {schema}.{table} VALUES {_rows(ROWS, 1 + k % 3)}")
    # a spec that evolved: old partitions stay live under the old spec
    out.append(f"ALTER TABLE {schema}.evolved SET PROPERTIES partitioning = ARRAY['region', 'day(tstz)']")
    out += [f"INSERT INTO {schema}.evolved VALUES {_rows(ROWS, 4)}"] * 2
    # partitioning removed: the old partitions stay live under spec 0
    out.append(f"ALTER TABLE {schema}.unpartitioned_now SET PROPERTIES partitioning = ARRAY[]")
    out += [f"INSERT INTO {schema}.unpartitioned_now VALUES {_rows(ROWS, 4)}"] * 2
    # position delete files from DELETE and MERGE
    out.append(f"DELETE FROM {schema}.with_deletes WHERE id % 5 = 0")
    out.append(f"MERGE INTO {schema}.with_deletes t USING (VALUES (1, 'merged')) s(id, name) ON t.id = s.id "
               "WHEN MATCHED THEN UPDATE SET name = s.name")
    return out


def create_layouts(url: str, catalog: str, schema: str = "zoo") -> list[str]:
    """Run `layout_statements` on the real Trino in `catalog`; the statements that failed
    (with Trino's error), none when all ran."""
    failed = []
    for sql in layout_statements(schema):
        page = statement_when_scheduled(url, sql, catalog)
        err = page.get("error")
        if err:
            failed.append(f"{sql[:120]}: {err.get('errorName')}: {err.get('message')}")
    return failed


def not_scheduled(err: dict | None) -> bool:
    """A statement the coordinator could not schedule yet: a fresh coordinator answers its
    first writes `GENERIC_INTERNAL_ERROR: nodes is empty` (or NO_NODES_AVAILABLE) for a few
    seconds after its first query ran; nothing was written."""
    if not err:
        return False
    return err.get("errorName") == "NO_NODES_AVAILABLE" or "nodes is empty" in (err.get("message") or "")


def statement_when_scheduled(url: str, sql: str, catalog: str, within_s: float = 90) -> dict:
    deadline = time.monotonic() + within_s
    while True:
        page = statement(url, sql, timeout=120, catalog=catalog)
        if not not_scheduled(page.get("error")) or time.monotonic() > deadline:
            return page
        time.sleep(1)

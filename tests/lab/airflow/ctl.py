#!/usr/bin/env python3
"""Start and stop the lab's real Apache Airflow (3.x with REST API v2, or 2.x with API v1).

    ctl.py up   --venv VENV --home DIR --port P --trino-url http://127.0.0.1:N --trino-user floe --major 3|2
    ctl.py down --home DIR

`up` prints exactly one JSON line on stdout (progress goes to stderr):

    {"url", "api", "version", "user", "password", "viewer_user", "viewer_password", "pids": {...}}

History: the maintenance DAGs are `@daily` with `catchup=True` and a start date in the past, so
the scheduler itself creates and runs one scheduled run per past day: two weeks for the
incident's DAG (compact_documents, failing every night), the last three days for the two that
report success (what a fresh machine spends on the history is mostly these runs: every
compact_parcels run is a real optimize on Trino). That takes a few
minutes, so the resulting AIRFLOW_HOME (SQLite DB + task logs) is cached under
`$FLOE_CACHE_DIR/airflow/` keyed by the DAG sources, the lock file, HISTORY_FORMAT and the DAG
folder's path, and restored on later bring-ups while it is younger than 12 hours (older: history is run
again). A restored history whose last day is before today is completed by the scheduler's own
catch-up before `up` returns.

Everything listens on 127.0.0.1 only. Every process is started in its own session; `down` stops
each session (SIGTERM, wait, SIGKILL), which covers LocalExecutor workers and task supervisors.
Standard library only.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
DAGS_DIR = HERE / "dags"

HISTORY_DAYS = 14
# The DAGs that report success keep a shorter history (see the module's docstring).
HEALTHY_HISTORY_DAYS = 3
# Part of the history cache key with the DAG sources and the lock file: bump a major's number when
# a change here alters what its history looks like (settings the runs see, the history's shape).
HISTORY_FORMAT = {3: 2, 2: 4}
CACHE_MAX_AGE_S = 12 * 3600
HISTORY_DAGS = {  # dag_id -> the state every history run must end in
    "compact_documents": "failed",
    "compact_permits": "success",
    "compact_parcels": "success",
}
HISTORY_DAYS_OF = {
    "compact_documents": HISTORY_DAYS,
    "compact_permits": HEALTHY_HISTORY_DAYS,
    "compact_parcels": HEALTHY_HISTORY_DAYS,
}
ALL_DAGS = [*HISTORY_DAGS, "expire_snapshots"]
BROKEN_FILE = "broken_dag.py"
# DAG files without a schedule, hence without history: left out of the history cache key, so
# adding one keeps the cached history (the DAG processor parses them after a restore).
NO_HISTORY_FILES = {"compact_loop.py", "compact_serve.py", "dagcode_hook.py", "dagcode_operator.py",
                    "dagcode_helper.py", "dagcode_clean.py"}

USERS = {"admin": "admin", "viewer": "viewer"}
# Fixed secrets: deterministic tokens and encrypted fields across restarts and cache restores.
JWT_SECRET = "floe-lab-airflow-jwt-secret-" + "0123456789abcdef" * 4  # 92 bytes (HS512 wants >= 64)
SECRET_KEY = "floe-lab-airflow-secret-key"
FERNET_KEY = base64.urlsafe_b64encode(b"floe-lab-airflow-fernet-key-0001").decode()

STATE_FILE = "ctl-state.json"
HISTORY_FILE = "floe-history.json"
PROC_LOG_DIR = "proc-logs"
CACHED_ENTRIES = ("airflow.db", "logs", HISTORY_FILE)

DEAD_TRINO = ("trino-old.internal", 8080, "etl")
# The connection to the real Trino over HTTPS with a password (compact_parcels uses it).
TLS_CONN = "trino_tls"
TLS_PASSWORD_ENV = "FLOE_LAB_TRINO_TLS_PASSWORD"


def log(msg: str) -> None:
    print(f"[airflow-ctl {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# processes


def _stat(pid: int) -> tuple[str, int, int, int] | None:
    """(state, ppid, session, starttime) of a process, None if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = raw[raw.rindex(")") + 2 :].split()
    return fields[0], int(fields[1]), int(fields[3]), int(fields[19])


def _alive(pid: int, starttime: int | None = None) -> bool:
    st = _stat(pid)
    if st is None or st[0] == "Z":
        return False
    return starttime is None or st[3] == starttime


def _members(roots: dict[int, int]) -> set[int]:
    """Live processes in the sessions of the given roots (pid -> starttime), plus descendants."""
    found: set[int] = set()
    table: dict[int, tuple[str, int, int, int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat(int(entry))
            if st is not None:
                table[int(entry)] = st
    for pid, (state, _ppid, session, start) in table.items():
        if state == "Z":
            continue
        root_start = roots.get(session)
        if root_start is not None and start >= root_start:
            found.add(pid)
    for pid, start in roots.items():
        st = table.get(pid)
        if st and st[3] == start and st[0] != "Z":
            found.add(pid)
    changed = True
    while changed:  # descendants that left the session (none expected, but never leave one behind)
        changed = False
        for pid, (state, ppid, _s, _t) in table.items():
            if state != "Z" and ppid in found and pid not in found:
                found.add(pid)
                changed = True
    return found


def _signal(pids, sig) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _wait_gone(roots: dict[int, int], timeout: float) -> set[int]:
    deadline = time.monotonic() + timeout
    while True:
        left = _members(roots)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.2)


def stop_processes(procs: dict[str, dict]) -> dict:
    """Stop every recorded process and everything in its session. Returns figures."""
    t0 = time.monotonic()
    roots = {p["pid"]: p["start"] for p in procs.values()}
    members = _members(roots)
    _signal([pid for pid, start in roots.items() if _alive(pid, start)], signal.SIGTERM)
    left = _wait_gone(roots, 10)
    if left:
        log(f"still running after SIGTERM to the roots: {sorted(left)}; SIGTERM to all of them")
        _signal(left, signal.SIGTERM)
        left = _wait_gone(roots, 5)
    if left:
        log(f"SIGKILL {sorted(left)}")
        _signal(left, signal.SIGKILL)
        left = _wait_gone(roots, 5)
    return {"stopped": len(members), "left": sorted(left), "seconds": round(time.monotonic() - t0, 1)}


def _free_port() -> int:
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_process(name: str, argv: list[str], env: dict, home: Path) -> dict:
    logs = home / PROC_LOG_DIR
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / f"{name}.log", "ab") as out:
        proc = subprocess.Popen(
            argv,
            env=env,
            cwd=home,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    st = _stat(proc.pid)
    return {"pid": proc.pid, "start": st[3] if st else 0, "argv": argv}


def run_cli(argv: list[str], env: dict, home: Path, what: str, timeout: float = 600) -> None:
    t0 = time.monotonic()
    logs = home / PROC_LOG_DIR
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / "cli.log", "ab") as out:
        proc = subprocess.run(
            argv, env=env, cwd=home, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            timeout=timeout, start_new_session=True,
        )
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {proc.returncode}); see {logs / 'cli.log'}")
    log(f"{what}: {time.monotonic() - t0:.1f} s")


# --------------------------------------------------------------------------------------------
# REST


class Api:
    def __init__(self, base: str, major: int, user: str, password: str):
        self.base = base.rstrip("/")
        self.major = major
        self.prefix = "/api/v2" if major >= 3 else "/api/v1"
        self.user, self.password = user, password
        self._token: str | None = None

    def _raw(self, method: str, path: str, body=None, headers=None, timeout=30.0):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as err:
            status, raw = err.code, err.read()
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode(errors="replace")

    def _auth(self) -> dict:
        if self.major < 3:
            cred = base64.b64encode(f"{self.user}:{self.password}".encode()).decode()
            return {"Authorization": f"Basic {cred}"}
        if self._token is None:
            status, body = self._raw("POST", "/auth/token", {"username": self.user, "password": self.password})
            if status != 201:
                raise RuntimeError(f"POST /auth/token -> {status} {body}")
            self._token = body["access_token"]
        return {"Authorization": f"Bearer {self._token}"}

    def call(self, method: str, path: str, body=None, expect=(200,)):
        status, out = self._raw(method, self.prefix + path, body, self._auth())
        if status == 401 and self.major >= 3:
            self._token = None
            status, out = self._raw(method, self.prefix + path, body, self._auth())
        if expect and status not in expect:
            raise RuntimeError(f"{method} {self.prefix}{path} -> {status} {out}")
        return status, out

    # ---- helpers that hide the v1/v2 differences ctl needs
    def health(self) -> dict | None:
        path = "/api/v2/monitor/health" if self.major >= 3 else "/api/v1/health"
        try:
            status, body = self._raw("GET", path, timeout=5)
        except OSError:
            return None
        return body if status == 200 and isinstance(body, dict) else None

    def version(self) -> str:
        return self._raw("GET", self.prefix + "/version")[1]["version"]

    def import_error_files(self) -> list[str]:
        return [e["filename"] for e in self.call("GET", "/importErrors")[1]["import_errors"]]

    def runs(self, dag_id: str) -> list[dict]:
        order = "-run_after" if self.major >= 3 else "-execution_date"
        return self.call("GET", f"/dags/{dag_id}/dagRuns?limit=100&order_by={order}")[1]["dag_runs"]

    def set_paused(self, dag_id: str, paused: bool) -> None:
        self.call("PATCH", f"/dags/{dag_id}?update_mask=is_paused", {"is_paused": paused})

    def put_connection(self, conn: dict) -> None:
        cid = urllib.parse.quote(conn["connection_id"], safe="")
        self.call("DELETE", f"/connections/{cid}", expect=(200, 204, 404))
        self.call("POST", "/connections", conn, expect=(200, 201))


def _ts(value) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def healthy(api: Api, since: datetime) -> bool:
    """Every component healthy, with a heartbeat from the processes started at `since` (a restored
    DB still holds the previous processes' recent heartbeats)."""
    h = api.health()
    if not h:
        return False
    parts = {"metadatabase": None, "scheduler": "latest_scheduler_heartbeat"}
    if api.major >= 3:
        parts["dag_processor"] = "latest_dag_processor_heartbeat"
    for part, beat in parts.items():
        info = h.get(part) or {}
        if info.get("status") != "healthy":
            return False
        if beat and (_ts(info.get(beat)) or since) <= since:
            return False
    return True


def dags_parsed(api: Api, since: datetime) -> bool:
    """All lab DAGs parsed by this bring-up's processor, and the broken file reported."""
    dags = {d["dag_id"]: d for d in api.call("GET", "/dags?limit=100")[1]["dags"]}
    for dag_id in ALL_DAGS:
        parsed = _ts((dags.get(dag_id) or {}).get("last_parsed_time"))
        if parsed is None or parsed < since:
            return False
    return any(f.endswith(BROKEN_FILE) for f in api.import_error_files())


def wait_for(what: str, check, timeout: float, interval: float = 1.0, procs: dict | None = None):
    t0 = time.monotonic()
    last_err = None
    while time.monotonic() - t0 < timeout:
        try:
            result = check()
            if result:
                log(f"{what}: {time.monotonic() - t0:.1f} s")
                return result
        except (OSError, RuntimeError, KeyError, ValueError) as exc:
            last_err = exc
        for name, p in (procs or {}).items():
            if not _alive(p["pid"], p["start"]):
                raise RuntimeError(f"{name} (pid {p['pid']}) exited while waiting for {what}")
        time.sleep(interval)
    raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what} (last error: {last_err})")


# --------------------------------------------------------------------------------------------
# configuration


def connections(trino_url: str, trino_user: str, tls: dict | None = None) -> list[dict]:
    """The lab's Trino connections; with `tls` ({url, user, password, ca_file}) also
    `trino_tls`: the real Trino over HTTPS with a password, as production connects."""
    u = urllib.parse.urlsplit(trino_url)
    extra = json.dumps({"catalog": "iceberg", "protocol": u.scheme or "http"})
    dead_host, dead_port, dead_user = DEAD_TRINO
    dead_extra = json.dumps({"catalog": "iceberg", "protocol": "http"})
    secure = []
    if tls:
        t = urllib.parse.urlsplit(tls["url"])
        secure.append({
            "connection_id": TLS_CONN, "conn_type": "trino", "description": "Lakehouse Trino over TLS",
            "host": t.hostname, "port": t.port, "login": tls["user"], "password": tls["password"],
            "schema": "zoning",
            # the provider passes `verify` to the client: the lab CA that signed the coordinator
            "extra": json.dumps({"catalog": "iceberg", "protocol": "https", "verify": tls["ca_file"]})})
    return secure + [
        {"connection_id": "trino_default", "conn_type": "trino", "description": "Lakehouse Trino",
         "host": u.hostname, "port": u.port, "login": trino_user, "schema": "zoning", "extra": extra},
        {"connection_id": "trino_documents", "conn_type": "trino",
         "description": "Trino for zoning.documents compaction",
         "host": dead_host, "port": dead_port, "login": dead_user, "schema": "zoning", "extra": dead_extra},
        {"connection_id": "trino_permits", "conn_type": "trino",
         "description": "Trino for zoning.permits compaction",
         "host": dead_host, "port": dead_port, "login": dead_user, "schema": "zoning", "extra": dead_extra},
    ]


def airflow_env(major: int, venv: Path, home: Path, port: int, history_start: str,
                test_connection: str = "enabled") -> dict:
    # REQUESTS_CA_BUNDLE and CURL_CA_BUNDLE, where the machine sets them, replace the CA a
    # requests session was given (requests merges the environment over `verify`): the
    # trino_tls connection's own CA (`verify` in its extra) would never be used, and its
    # handshake would fail against the system's roots. A worker that honours its
    # connections' CA runs without them.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AIRFLOW", "FLOE_LAB_HISTORY"))
           and k not in (TLS_PASSWORD_ENV, "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")}
    env.update({
        "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}",  # executors run `airflow …`
        "VIRTUAL_ENV": str(venv),
        "AIRFLOW_HOME": str(home),
        # A 30 s SQLite busy timeout (sqlite3's default is 5 s): under the suite's load a
        # write behind the scheduler's waited longer and the API answered 500 "Database error".
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}?timeout=30",
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_DIR),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
        # Airflow's default is Disabled (POST /connections/test answers 403), as deployed
        "AIRFLOW__CORE__TEST_CONNECTION": test_connection.capitalize(),
        "AIRFLOW__CORE__FERNET_KEY": FERNET_KEY,
        "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(home / "logs"),
        # The DAG files are parsed as deployments that ship them with their image parse them:
        # the folder listed at Airflow's default (every 5 minutes), each file parsed again
        # every 5 minutes rather than every 30 s ("keeping this number low will increase CPU
        # usage", Airflow's reference says). Every bring-up parses them all at its start and
        # waits for it; no test changes a file later. Idle, Airflow 2's parsing took 6.8
        # CPU-s a minute at 10 s, 3.0 at 30 s; Airflow 3's 3.3 at 30 s.
        "FLOE_LAB_HISTORY_START": history_start,
        "FLOE_LAB_HEALTHY_HISTORY_START": dag_start(history_start, "compact_permits"),
        "PYTHONUNBUFFERED": "1",
    })
    if major >= 3:
        env.update({
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "4",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": ",".join(f"{u}:{u}" for u in USERS),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(home / "passwords.json"),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(port),
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__API__SECRET_KEY": SECRET_KEY,
            "AIRFLOW__API_AUTH__JWT_SECRET": JWT_SECRET,
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "300",
        })
    else:
        env.update({
            # Airflow 2 refuses LocalExecutor on SQLite unless this check is skipped (as its own test
            # suite does). SequentialExecutor would start a fresh `airflow tasks run` interpreter
            # per task (~4 s each, the history took 7-15 min); LocalExecutor forks from the warm
            # scheduler. Two task slots and the 30 s SQLite busy timeout keep lock waits harmless.
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "2",
            "_AIRFLOW__SKIP_DATABASE_EXECUTOR_COMPATIBILITY_CHECK": "1",
            "AIRFLOW__API__AUTH_BACKENDS": "airflow.providers.fab.auth_manager.api.auth.backend.basic_auth,"
                                          "airflow.api.auth.backend.session",
            "AIRFLOW__WEBSERVER__WEB_SERVER_HOST": "127.0.0.1",
            "AIRFLOW__WEBSERVER__WEB_SERVER_PORT": str(port),
            "AIRFLOW__WEBSERVER__BASE_URL": f"http://127.0.0.1:{port}",
            "AIRFLOW__WEBSERVER__WORKERS": "2",
            "AIRFLOW__WEBSERVER__SECRET_KEY": SECRET_KEY,
            "AIRFLOW__SCHEDULER__MIN_FILE_PROCESS_INTERVAL": "300",
            # The task runner's own "mini scheduler" schedules a finished task's downstream
            # while the scheduler may too; in 2.10 each counts a try, so a task with no
            # retries starts at "attempt 2 of 1" (seen on compact and report of the history).
            # The scheduler alone schedules here; Airflow 3 has no mini scheduler.
            "AIRFLOW__SCHEDULER__SCHEDULE_AFTER_TASK_EXECUTION": "False",
        })
    return env


# --------------------------------------------------------------------------------------------
# history cache


def cache_root() -> Path:
    base = os.environ.get("FLOE_CACHE_DIR")
    if base:
        return Path(base)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "floe"


def history_key(major: int) -> str:
    h = hashlib.sha256()
    h.update(f"format={HISTORY_FORMAT[major]}\nmajor={major}\ndags={DAGS_DIR}\n".encode())
    for path in [HERE / f"requirements-airflow{major}.lock",
                 *sorted(p for p in DAGS_DIR.rglob("*")
                         if p.is_file() and "__pycache__" not in p.parts and p.name not in NO_HISTORY_FILES)]:
        h.update(f"\0{path.relative_to(HERE)}\0".encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def history_start_for(major: int, today: datetime) -> str:
    # Airflow 3 (CronTriggerTimetable) runs logical date D at D; Airflow 2 (data intervals) at D+1.
    days = HISTORY_DAYS - 1 if major >= 3 else HISTORY_DAYS
    return (today - timedelta(days=days)).date().isoformat()


def dag_start(start: str, dag_id: str) -> str:
    """The first logical date of `dag_id`'s history, from the incident DAG's (`start`)."""
    later = HISTORY_DAYS - HISTORY_DAYS_OF.get(dag_id, HISTORY_DAYS)
    return (datetime.fromisoformat(start) + timedelta(days=later)).date().isoformat()


def expected_runs(major: int, start: str, now: datetime) -> int:
    days = (now.date() - datetime.fromisoformat(start).date()).days
    return days + 1 if major >= 3 else days


def save_cache(home: Path, tarball: Path) -> None:
    tmpdir = tarball.parent / f".tmp-{os.getpid()}"
    shutil.rmtree(tmpdir, ignore_errors=True)
    tmpdir.mkdir(parents=True)
    try:
        src = sqlite3.connect(home / "airflow.db")
        dst = sqlite3.connect(tmpdir / "airflow.db")
        with dst:
            src.backup(dst)
        src.close()
        # Restored homes start with the history DAGs paused so their connections can be pointed
        # at the current Trino before any catch-up run starts; `up` unpauses them.
        dst.execute(f"UPDATE dag SET is_paused = 1 WHERE dag_id IN ({','.join('?' * len(ALL_DAGS))})", ALL_DAGS)
        dst.commit()
        dst.close()
        tmp_tar = tarball.with_suffix(".part")
        with tarfile.open(tmp_tar, "w:gz", compresslevel=1) as tar:
            tar.add(tmpdir / "airflow.db", arcname="airflow.db")
            tar.add(home / "logs", arcname="logs")
            tar.add(home / HISTORY_FILE, arcname=HISTORY_FILE)
        os.replace(tmp_tar, tarball)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def restore_cache(tarball: Path, home: Path) -> None:
    with tarfile.open(tarball, "r:gz") as tar:
        tar.extractall(home, filter="data")


# --------------------------------------------------------------------------------------------
# up / down


def reset_home(home: Path) -> None:
    if home.exists():
        for entry in home.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    home.mkdir(parents=True, exist_ok=True)


def read_state(home: Path) -> dict | None:
    try:
        return json.loads((home / STATE_FILE).read_text())
    except (FileNotFoundError, ValueError):
        return None


def history_check(api: Api, major: int, start: str) -> tuple[bool, str]:
    """(done, problem): done when every history DAG has all its runs and none is in progress."""
    problems = []
    for dag_id, final in HISTORY_DAGS.items():
        want = expected_runs(major, dag_start(start, dag_id), datetime.now(timezone.utc))
        runs = api.runs(dag_id)
        states = [r["state"] for r in runs]
        if len(runs) < want or any(s in ("queued", "running") for s in states):
            return False, f"{dag_id}: {len(runs)}/{want} runs, states {sorted(set(states))}"
        wrong = [r["dag_run_id"] for r in runs if r["state"] != final]
        if wrong:
            problems.append(f"{dag_id}: {len(wrong)} run(s) not {final}: {wrong[:3]}")
        # Every history task runs once (the DAGs have no retries): a second try is the
        # scheduler re-running a task it lost track of (heartbeats late on a loaded
        # machine), and a history that says so is not the seed's.
        tis = api.call("GET", f"/dags/{dag_id}/dagRuns/~/taskInstances?limit=100")[1]["task_instances"]
        again = sorted({(t["dag_run_id"], t["task_id"]) for t in tis if (t.get("try_number") or 0) > 1})
        if again:
            problems.append(f"{dag_id}: {len(again)} task(s) tried more than once: {again[:3]}")
    return True, "; ".join(problems)


def cmd_up(args) -> int:
    t_start = time.monotonic()
    home = Path(args.home).resolve()
    venv = Path(args.venv).resolve()
    major = args.major
    airflow = str(venv / "bin" / "airflow")
    if not Path(airflow).exists():
        log(f"{airflow} not found")
        return 2

    state = read_state(home)
    if (state and state.get("procs") and state.get("line")
            and all(_alive(p["pid"], p["start"]) for p in state["procs"].values())):
        log("already running")
        print(json.dumps(state["line"]), flush=True)
        return 0
    if state and state.get("procs"):
        stop_processes(state["procs"])

    key = history_key(major)
    cache_dir = cache_root() / "airflow"
    cache_dir.mkdir(parents=True, exist_ok=True)
    tarball = cache_dir / f"history-airflow{major}-{key}.tar.gz"
    lock = open(cache_dir / f"history-airflow{major}-{key}.lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)  # one history build per key at a time

    for stale in cache_dir.glob("history-airflow*.tar.gz"):  # expired caches of any key are useless
        with contextlib.suppress(OSError):
            if time.time() - stale.stat().st_mtime >= CACHE_MAX_AGE_S:
                stale.unlink()
                if stale == tarball:
                    log(f"history cache {tarball.name} is older than {CACHE_MAX_AGE_S // 3600} h: "
                        "running the history again")

    reset_home(home)
    now = datetime.now(timezone.utc)
    cached = tarball.exists()
    if cached:
        restore_cache(tarball, home)
        start = json.loads((home / HISTORY_FILE).read_text())["start"]
        log(f"restored history cache {tarball.name} (history from {start})")
    else:
        start = history_start_for(major, now)
        (home / HISTORY_FILE).write_text(json.dumps({"start": start, "created_at": now.isoformat(), "major": major}))
    (home / "passwords.json").write_text(json.dumps(USERS))
    env = airflow_env(major, venv, home, args.port, start, args.test_connection)

    procs: dict[str, dict] = {}

    def on_term(signum, _frame):  # let the cleanup below run when the caller gives up on us
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)

    def save_state(line=None):
        (home / STATE_FILE).write_text(json.dumps({"procs": procs, "line": line, "major": major}))

    try:
        if not cached:
            run_cli([airflow, "db", "migrate"], env, home, "db migrate")
            if major < 3:
                run_cli([airflow, "sync-perm"], env, home, "sync-perm (creates the Viewer role)")
                for user, role in (("admin", "Admin"), ("viewer", "Viewer")):
                    run_cli([airflow, "users", "create", "--username", user, "--password", USERS[user],
                             "--role", role, "--firstname", user, "--lastname", "lab",
                             "--email", f"{user}@lab.invalid"], env, home, f"users create {user}")
        # Write-ahead logging: readers and the writer no longer block each other. In the
        # default rollback journal, a fresh suite's load on Airflow 3 (a DAG run, connection
        # tests on its worker and floe's reads at once) made the scheduler's write wait out
        # its 30 s busy timeout: it died on "database is locked" and every later run waited.
        with contextlib.closing(sqlite3.connect(home / "airflow.db")) as db:
            db.execute("PRAGMA journal_mode=WAL")
        if major >= 3:
            names = {"api": [airflow, "api-server", "--host", "127.0.0.1", "--port", str(args.port)],
                     "scheduler": [airflow, "scheduler", "--skip-serve-logs"],
                     "dag-processor": [airflow, "dag-processor"]}
        else:
            names = {"webserver": [airflow, "webserver", "--hostname", "127.0.0.1", "--port", str(args.port)],
                     "scheduler": [airflow, "scheduler", "--skip-serve-logs"]}
        # Where the connection test is disabled (as deployed), a second API process of the same
        # Airflow (same metadata DB, same connections) has it enabled: what a deployment that
        # turned it on answers, for the tests of floe's reading of a test's verdict.
        tested_port = None
        envs = {name: env for name in names}
        if args.test_connection.lower() == "disabled":
            tested_port = _free_port()
            tested = "api-tested" if major >= 3 else "webserver-tested"
            if major >= 3:
                names[tested] = [airflow, "api-server", "--host", "127.0.0.1", "--port", str(tested_port),
                                 "--workers", "1"]
            else:
                names[tested] = [airflow, "webserver", "--hostname", "127.0.0.1", "--port", str(tested_port),
                                 "--workers", "1", "--pid", str(home / "webserver-tested.pid")]
            envs[tested] = dict(env, AIRFLOW__CORE__TEST_CONNECTION="Enabled")
        started = datetime.now(timezone.utc).replace(microsecond=0)
        for name, argv in names.items():
            procs[name] = start_process(name, argv, envs[name], home)
            save_state()
        log("started " + ", ".join(f"{n}={p['pid']}" for n, p in procs.items()))

        base = f"http://127.0.0.1:{args.port}"
        api = Api(base, major, "admin", USERS["admin"])
        wait_for("healthy", lambda: healthy(api, started), 300, procs=procs)
        tested_url = None
        if tested_port:
            tested_url = f"http://127.0.0.1:{tested_port}"
            tested_api = Api(tested_url, major, "admin", USERS["admin"])
            wait_for("the API with the connection test enabled", lambda: tested_api.version() is not None, 300,
                     procs=procs)
        wait_for("DAGs parsed", lambda: dags_parsed(api, started), 300, procs=procs)

        tls = None
        if args.trino_tls_url:
            tls = {"url": args.trino_tls_url, "user": args.trino_tls_user, "ca_file": args.trino_ca_file,
                   "password": os.environ.get(TLS_PASSWORD_ENV, "")}
        for conn in connections(args.trino_url, args.trino_user, tls):
            api.put_connection(conn)
        if not cached:
            trino_info = args.trino_url.rstrip("/") + "/v1/info"
            try:
                wait_for(f"Trino at {args.trino_url}", lambda: urllib.request.urlopen(trino_info, timeout=3).status == 200, 60)
            except RuntimeError as exc:
                log(f"warning: {exc}; compact_parcels history will fail")
        for dag_id in HISTORY_DAGS:
            api.set_paused(dag_id, False)

        budget = (900 if major >= 3 else 2400) if not cached else (300 if major >= 3 else 900)
        t_hist = time.monotonic()
        last = [""]

        def history_done():
            done, info = history_check(api, major, start)
            if not done and info != last[0] and time.monotonic() - t_hist > 5:
                log(f"history: {info}")
                last[0] = info
            return (done, info) if done else None

        _, problem = wait_for("history runs finished", history_done, budget, interval=3, procs=procs)
        if problem:
            log(f"warning: history is not as intended ({problem}); not caching it")
        elif not cached:
            save_cache(home, tarball)
            log(f"saved history cache {tarball}")

        line = {
            "url": base,
            "api": "v2" if major >= 3 else "v1",
            "version": api.version(),
            "user": "admin",
            "password": USERS["admin"],
            "viewer_user": "viewer",
            "viewer_password": USERS["viewer"],
            # `[core] test_connection`: "Disabled" (Airflow's default, 403 on a test) or "Enabled"
            "test_connection": args.test_connection.capitalize(),
            # The same Airflow's API with the test enabled, where it is disabled on `url`.
            "tested_url": tested_url,
            "tls_connection": TLS_CONN if tls else None,
            "pids": {name: p["pid"] for name, p in procs.items()},
        }
        save_state(line)
    except BaseException as exc:
        log(f"up failed: {exc}; stopping what was started")
        if procs:
            stop_processes(procs)
            save_state()
        return 1
    finally:
        lock.close()
    log(f"up ({'cached history' if cached else 'history built'}): {time.monotonic() - t_start:.1f} s")
    print(json.dumps(line), flush=True)
    return 0


def cmd_down(args) -> int:
    home = Path(args.home).resolve()
    state = read_state(home)
    if not state or not state.get("procs"):
        log("nothing recorded as running")
        return 0
    result = stop_processes(state["procs"])
    log(f"stopped {result['stopped']} process(es) in {result['seconds']} s")
    if result["left"]:
        log(f"could not stop: {result['left']}")
        return 1
    (home / STATE_FILE).unlink(missing_ok=True)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up")
    up.add_argument("--venv", required=True)
    up.add_argument("--home", required=True)
    up.add_argument("--port", type=int, required=True)
    up.add_argument("--trino-url", required=True)
    up.add_argument("--trino-user", default="floe")
    up.add_argument("--major", type=int, choices=(2, 3), default=3)
    up.add_argument("--test-connection", choices=("enabled", "disabled"), default="disabled",
                    help="[core] test_connection (Airflow's default: disabled)")
    up.add_argument("--trino-tls-url", help="the real Trino's HTTPS URL, for the trino_tls connection "
                    f"(its password in ${TLS_PASSWORD_ENV})")
    up.add_argument("--trino-tls-user")
    up.add_argument("--trino-ca-file", help="the CA that signed --trino-tls-url's certificate")
    down = sub.add_parser("down")
    down.add_argument("--home", required=True)
    args = parser.parse_args(argv)
    return cmd_up(args) if args.cmd == "up" else cmd_down(args)


if __name__ == "__main__":
    sys.exit(main())

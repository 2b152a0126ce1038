#!/usr/bin/env python3
"""Bring the lab up, report on it, and take it down (standard library only).

    python3 tests/lab/labctl.py up [--scale [--fleets mixed,pyiceberg,trino]] [--airflow2] [--no-airflow] [--full]
    python3 tests/lab/labctl.py status
    python3 tests/lab/labctl.py dashboard [--runs N] [--every SECONDS]
    python3 tests/lab/labctl.py down

See tests/lab/README.md for the contract (lab.json, control endpoint, scenario cache).
"""

from __future__ import annotations

import argparse
import datetime as dt
import fcntl
import hashlib
import importlib.util
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tarfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

LAB_ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(LAB_ROOT))
import dashboard  # noqa: E402  (standard library only, beside this file)
import prometheus  # noqa: E402  (standard library only, beside this file)
import objectstore  # noqa: E402  (standard library only, beside this file)
import realtrino  # noqa: E402  (standard library only, beside this file)
import trinodist  # noqa: E402  (standard library only, beside this file)

REPO_ROOT = LAB_ROOT.parents[1]
LAB_LOCK = LAB_ROOT / "requirements.lock"
S3_LOCK = LAB_ROOT / "requirements-s3.lock"
# The installer of the lab's other venvs (uv, itself installed by pip).
UV_LOCK = LAB_ROOT / "requirements-uv.lock"
AIRFLOW_CTL = LAB_ROOT / "airflow" / "ctl.py"
AIRFLOW_PROXY = LAB_ROOT / "airflow" / "proxy.py"
AIRFLOW_LOCKS = {
    3: LAB_ROOT / "airflow" / "requirements-airflow3.lock",
    2: LAB_ROOT / "airflow" / "requirements-airflow2.lock",
}
GENERATOR = LAB_ROOT / "scenarios" / "generate.py"
SCENARIO_MAX_AGE_S = 12 * 3600
DASHBOARD_RUNS_AT_START = 3

TRINO_USER = "floe"
BASIC_USERS = {"alice": "alice-secret"}
JWT_SUBJECT = "bob"
DENIED_USER = "mallory"
OAUTH2_USER = "carol"  # who the lab's identity provider logs in unless ?user= names another
COORDINATOR_ZONE = "Europe/Vienna"
ALIAS_HOST = "127.0.0.2"  # another loopback address the Trino-protocol server also listens on


# ---------------------------------------------------------------------------- paths
def lab_dir() -> Path:
    return Path(os.environ.get("FLOE_LAB_DIR") or REPO_ROOT / ".lab").resolve()


def cache_dir() -> Path:
    env = os.environ.get("FLOE_CACHE_DIR")
    if env:
        return Path(env).resolve()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return (Path(xdg) / "floe").resolve()


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def say(msg: str) -> None:
    print(f"lab: {msg}", flush=True)


class LabError(Exception):
    pass


# The server and the scenario generator are modules of the package `lab` (this directory),
# run as `python -m lab.<module>` with the package's parent directory on PYTHONPATH.
def lab_module(venv: Path, module: str, *args: str) -> list[str]:
    return [str(venv / "bin" / "python"), "-m", f"lab.{module}", *args]


def lab_env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(LAB_ROOT.parent), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


# ---------------------------------------------------------------------------- processes
def proc_start_time(pid: int) -> str | None:
    """Start time of a process (clock ticks since boot), to tell a PID from a reused one."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = stat[stat.rindex(")") + 2:].split()
    return rest[19]  # field 22 of /proc/pid/stat


def proc_state(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2:].split()[0]


def alive(pid: int, started: str | None = None) -> bool:
    if pid <= 0:
        return False
    st = proc_state(pid)
    if st is None or st in ("Z", "X"):
        return False
    return started is None or proc_start_time(pid) == started


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def stop_processes(records: dict[str, dict], grace_s: float = 10.0) -> None:
    """SIGTERM each recorded process and its descendants, wait, then SIGKILL what is left.
    A record is {"pid": int, "started": str}; a PID whose start time changed is not ours."""
    targets: dict[int, str | None] = {}
    for rec in records.values():
        pid = int(rec.get("pid") or 0)
        if not alive(pid, rec.get("started")):
            continue
        targets[pid] = rec.get("started")
        for d in descendants(pid):
            targets.setdefault(d, proc_start_time(d))
    if not targets:
        return
    for pid in targets:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(alive(p, s) for p, s in targets.items()):
        time.sleep(0.1)
    for pid, started in targets.items():
        if alive(pid, started):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(alive(p, s) for p, s in targets.items()):
        time.sleep(0.05)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------- runtime record
class Runtime:
    """`.lab/run.json`: what this lab started, written as it goes so `down` can always clean up."""

    def __init__(self, root: Path):
        self.path = root / "run.json"
        self.data: dict = {"processes": {}, "airflow_homes": []}
        if self.path.exists():
            try:
                self.data = json.loads(self.path.read_text())
            except ValueError:
                pass

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2))
        tmp.replace(self.path)

    _lock = threading.Lock()

    def add(self, name: str, pid: int) -> None:
        with self._lock:
            self.data["processes"][name] = {"pid": pid, "started": proc_start_time(pid)}
            self.save()

    @property
    def processes(self) -> dict:
        return self.data.get("processes", {})


# ---------------------------------------------------------------------------- venvs
def ensure_venv(name: str, lock: Path) -> Path:
    """The venv for `lock`, built if needed. It is built in a temporary directory beside its
    final place and renamed there only once pip has finished, so an interrupted build (a
    ctrl-c during the first demo) never leaves a half-made venv that later runs reuse."""
    if not lock.exists():
        raise LabError(f"{lock} not found")
    venv = cache_dir() / "venvs" / f"{name}-{sha256_file(lock)[:12]}"
    marker = venv / ".floe-complete"
    if marker.exists():
        return venv
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".{venv.name}.lock", "w") as lockf:
        fcntl.flock(lockf, fcntl.LOCK_EX)
        if marker.exists():
            return venv
        # Under the lock nobody else is building it, and without the marker nobody runs
        # from it: whatever is there is the remains of an interrupted build.
        if venv.exists():
            say(f"removing incomplete venv {venv} (no completion marker)")
            shutil.rmtree(venv)
        for stale in venv.parent.glob(f".{venv.name}.building-*"):
            shutil.rmtree(stale, ignore_errors=True)
        say(f"building venv {venv.name} from {lock.relative_to(REPO_ROOT) if lock.is_relative_to(REPO_ROOT) else lock}")
        tmp = venv.parent / f".{venv.name}.building-{os.getpid()}"
        log = venv.parent / f"{venv.name}.build.log"
        # uv installs every venv but its own: pip took 21-25 CPU-s for an Airflow's 140
        # packages, uv 2.3 (the same packages, `pip freeze` alike). Neither byte-compiles.
        uv = None if lock == UV_LOCK else ensure_venv("uv", UV_LOCK) / "bin" / "uv"
        with open(log, "w") as out:
            try:
                subprocess.run([sys.executable, "-m", "venv", str(tmp)], check=True, stdout=out, stderr=out)
                if uv is None:
                    subprocess.run(
                        [str(tmp / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check",
                         "--no-input", "--progress-bar", "off", "--no-compile", "-r", str(lock)],
                        check=True, stdout=out, stderr=out,
                    )
                else:
                    subprocess.run(
                        [str(uv), "pip", "install", "--no-progress", "--python", str(tmp / "bin" / "python"),
                         "-r", str(lock)],
                        check=True, stdout=out, stderr=out, env=uv_env(),
                    )
            except subprocess.CalledProcessError as e:
                shutil.rmtree(tmp, ignore_errors=True)
                tail = log.read_text()[-3000:]
                raise LabError(f"building {venv.name} failed ({e}); see {log}:\n{tail}") from None
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        relocate_venv(tmp, venv)
        (tmp / ".floe-complete").write_text(utc_now() + "\n")
        os.rename(tmp, venv)
    return venv


def uv_env() -> dict:
    """uv's environment: its cache beside the venvs, and pip's index, extra wheels and CA
    bundle where pip's environment names them (uv reads no pip setting of its own)."""
    env = {**os.environ, "UV_CACHE_DIR": str(cache_dir() / "uv")}
    for pip_name, uv_name in (("PIP_INDEX_URL", "UV_DEFAULT_INDEX"), ("PIP_EXTRA_INDEX_URL", "UV_INDEX"),
                              ("PIP_FIND_LINKS", "UV_FIND_LINKS"), ("PIP_CERT", "SSL_CERT_FILE")):
        if os.environ.get(pip_name) and uv_name not in os.environ:
            env[uv_name] = os.environ[pip_name]
    return env


def relocate_venv(built: Path, final: Path) -> None:
    """Point the scripts of a venv built at `built` at `final`, where it is about to be
    renamed: console scripts carry their interpreter's absolute path in the shebang, and
    the activate scripts carry VIRTUAL_ENV."""
    old, new = str(built).encode(), str(final).encode()
    for f in (built / "bin").iterdir():
        if f.is_symlink() or not f.is_file():
            continue
        data = f.read_bytes()
        if old in data[:4096] or (f.name.startswith("activate") and old in data):
            f.write_bytes(data.replace(old, new))


# ---------------------------------------------------------------------------- scenarios
# The scale scenario's fleets by writer (scenarios/scale.py), each a catalog of its own:
# the mixed one keeps the catalog name `scale` the benchmarks and tests have always read.
SCALE_FLEETS = {"mixed": "scale", "pyiceberg": "scale_pyiceberg", "trino": "scale_trino"}
# The Delta fleet (`--fleets delta`): DELTA_FLEET_TABLES delta-rs tables more in the Delta
# Lake catalog, beside its own (scenarios/delta.py).
DELTA_FLEET_TABLES = 100
# The catalog of the small pyiceberg-written fleet every lab serves.
PYFLEET = "pyfleet"


def parse_fleets(value: str) -> list[str]:
    fleets = [f.strip() for f in value.split(",") if f.strip()]
    unknown = [f for f in fleets if f not in SCALE_FLEETS and f != "delta"]
    if unknown or not fleets:
        raise argparse.ArgumentTypeError(
            f"--fleets: a comma-separated list of {', '.join([*SCALE_FLEETS, 'delta'])} (not {value!r})")
    return list(dict.fromkeys(fleets))


def scenario_key(args: list[str], live: Path, lock: Path) -> str:
    h = hashlib.sha256()
    for path in sorted((LAB_ROOT / "scenarios").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            h.update(str(path.relative_to(LAB_ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    h.update(lock.read_bytes())
    h.update(json.dumps(args).encode())
    h.update(str(live).encode())
    return h.hexdigest()[:16]


def ensure_scenario(venv: Path, name: str, extra: list[str], root: Path, scenario: str | None = None) -> dict:
    """The warehouse `name` (its live directory and cache entry), generated as `scenario`
    (default: `name`) with `extra` arguments."""
    live = root / "warehouses" / name
    args = ["--scenario", scenario or name, *extra]
    key = scenario_key(args, live, LAB_LOCK)
    store = cache_dir() / "scenarios"
    store.mkdir(parents=True, exist_ok=True)
    # one pristine copy per (scenario, live path): older keys of the same pair are replaced
    prefix = f"{name}-{hashlib.sha256(str(live).encode()).hexdigest()[:8]}-"
    tarball = store / f"{prefix}{key}.tar"
    now = time.time()
    for old in store.glob("*.tar"):
        if now - old.stat().st_mtime > SCENARIO_MAX_AGE_S:
            old.unlink(missing_ok=True)
    if live.exists():
        shutil.rmtree(live)
    live.parent.mkdir(parents=True, exist_ok=True)
    if tarball.exists():
        say(f"scenario {name}: restoring the pristine copy from {tarball.name}")
        tar = shutil.which("tar")
        if tar:  # GNU tar unpacks a few thousand small files several times faster
            subprocess.run([tar, "-xf", str(tarball), "-C", str(live.parent)], check=True)
        else:
            with tarfile.open(tarball) as tf:
                tf.extractall(live.parent, filter="tar")
        return {"name": name, "path": str(live), "generated_at": generated_at(live, tarball.stat().st_mtime),
                "expected": str(live / "expected.json"), "cached": True}
    say(f"scenario {name}: generating ({' '.join(args)})")
    log = root / "logs" / f"generate-{name}.log"
    with open(log, "w") as out:
        proc = subprocess.run(
            lab_module(venv, "scenarios.generate", *args, "--out", str(live)),
            stdout=out, stderr=out, cwd=str(REPO_ROOT), env=lab_env(),
        )
    if proc.returncode != 0:
        raise LabError(f"scenario generator failed (exit {proc.returncode}); see {log}:\n{log.read_text()[-3000:]}")
    if not (live / "expected.json").exists():
        raise LabError(f"scenario generator wrote no {live / 'expected.json'}")
    tmp = tarball.with_suffix(".tar.tmp")
    with tarfile.open(tmp, "w") as tf:
        tf.add(live, arcname=name)
    tmp.replace(tarball)
    for stale in store.glob(f"{prefix}*.tar"):
        if stale != tarball:
            stale.unlink(missing_ok=True)
    return {"name": name, "path": str(live), "generated_at": generated_at(live, time.time()),
            "expected": str(live / "expected.json"), "cached": False}


def generated_at(live: Path, fallback: float) -> str:
    """The generator's own clock (expected.json), else when the warehouse was written."""
    try:
        value = json.loads((live / "expected.json").read_text()).get("generated_at")
        if value:
            return value
    except (OSError, ValueError):
        pass
    return dt.datetime.fromtimestamp(fallback, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------------------- trino
def load_jwt_module():
    spec = importlib.util.spec_from_file_location("lab_jwt_hs256", LAB_ROOT / "trino" / "jwt_hs256.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def http_json(url: str, timeout: float = 2.0, ca_file: str | None = None):
    ctx = ssl.create_default_context(cafile=ca_file) if url.startswith("https") else None
    with urllib.request.urlopen(url, timeout=timeout, context=ctx) as resp:
        return json.loads(resp.read())


def start_trino(venv: Path, root: Path, catalogs: dict, runtime: Runtime, stub: bool) -> dict:
    tdir = root / "trino"
    tdir.mkdir(parents=True, exist_ok=True)
    state_file = tdir / "state.json"
    state_file.unlink(missing_ok=True)
    jwt_secret = secrets.token_hex(32)
    config = {
        "environment": "lab",
        "time_zone": COORDINATOR_ZONE,
        "page_size": 1000,
        "client_timeout_s": 300,
        "worker_threads": 4,
        "engine": {"kind": "stub"} if stub else {"kind": "real", "catalogs": catalogs},
        "tls": {"dir": str(root / "tls")},
        "auth": {"users": BASIC_USERS, "jwt_secret": jwt_secret, "oauth2_user": OAUTH2_USER},
        "access": {"denied_users": [DENIED_USER]},
        "listeners": [
            {"name": "plain", "port": 0, "version": 480, "auth": ["insecure"], "control": True},
            {"name": "https", "port": 0, "version": 480, "auth": ["password", "jwt"], "tls": True},
            {"name": "v481", "port": 0, "version": 481, "auth": ["insecure"]},
            # the real coordinator's release: the parity run compares the two servers like for like
            {"name": "v476", "port": 0, "version": 476, "auth": ["insecure"]},
            {"name": "oauth2", "port": 0, "version": 480, "auth": ["oauth2"]},
            {"name": "v451", "port": 0, "version": 451, "auth": ["insecure"], "legacy_type_signatures": True},
        ],
        "state_file": str(state_file),
        "alias_host": ALIAS_HOST,
    }
    cfg_path = tdir / "config.json"
    cfg_path.write_text(json.dumps(config, indent=2))
    os.chmod(cfg_path, 0o600)
    log = open(root / "logs" / "trino.log", "ab")
    proc = subprocess.Popen(
        lab_module(venv, "trino.server", "--config", str(cfg_path)),
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=str(REPO_ROOT), env=lab_env(),
        start_new_session=True,
    )
    runtime.add("trino", proc.pid)
    deadline = time.monotonic() + 180
    state = None
    info = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LabError(f"the Trino server exited ({proc.returncode}); see {root / 'logs' / 'trino.log'}:\n"
                           + (root / "logs" / "trino.log").read_text()[-3000:])
        if state is None and state_file.exists():
            state = json.loads(state_file.read_text())
        if state is not None:
            try:
                info = http_json(state["listeners"]["plain"]["url"] + "/v1/info", timeout=2)
                if not info.get("starting", True):
                    break
            except (urllib.error.URLError, OSError, ValueError):
                pass
        time.sleep(0.05)
    else:
        raise LabError("the Trino server did not become ready within 180 s")
    listeners = state["listeners"]
    jwt = load_jwt_module()
    token = jwt.mint(bytes.fromhex(jwt_secret), JWT_SUBJECT)
    return {
        "url": listeners["plain"]["url"],
        "version": listeners["plain"]["version"],
        "user": TRINO_USER,
        "catalog": "iceberg",
        "control_url": listeners["plain"]["url"] + "/_lab",
        "https_url": listeners["https"]["url"],
        "ca_file": state.get("ca_file", str(root / "tls" / "ca.pem")),
        "other_ca_file": state.get("other_ca_file", str(root / "tls" / "other-ca.pem")),
        # the same listeners on a second loopback address (null when it could not be bound)
        "alias_host": ALIAS_HOST if "alias_url" in listeners["plain"] else None,
        "alias_url": listeners["plain"].get("alias_url"),
        "https_alias_url": listeners["https"].get("alias_url"),
        "users": dict(BASIC_USERS),
        "bearer_token": token,
        "bearer_user": JWT_SUBJECT,
        "denied_user": DENIED_USER,
        "time_zone": COORDINATOR_ZONE,
        "listeners": {"v481": listeners["v481"]["url"], "v476": listeners["v476"]["url"],
                      "v451": listeners["v451"]["url"]},
        # OAuth2 external authentication (loopback HTTP): the challenge, token server and IdP
        "oauth2_url": listeners["oauth2"]["url"],
        "oauth2_user": OAUTH2_USER,
        "oauth2_control_url": listeners["plain"]["url"] + "/_lab/oauth2",
        "engine": "stub" if stub else "real",
        "log": str(root / "logs" / "trino.log"),
    }


def start_second(venv: Path, root: Path, seed_path: str, runtime: Runtime) -> dict:
    """The lab's second cluster (lab/trino/second.py): the stand-in over a copy of the seed's
    catalog, so `floe --all` has two clusters whose same-named tables move apart."""
    d = root / "second"
    d.mkdir(parents=True, exist_ok=True)
    state_file = d / "state.json"
    state_file.unlink(missing_ok=True)
    log_path = root / "logs" / "second.log"
    log = open(log_path, "ab")
    proc = subprocess.Popen(
        lab_module(venv, "trino.second", "--from", seed_path, "--dir", str(d)),
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=str(REPO_ROOT), env=lab_env(),
        start_new_session=True,
    )
    runtime.add("second", proc.pid)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LabError(f"the second cluster exited ({proc.returncode}); see {log_path}:\n"
                           + log_path.read_text(errors="replace")[-3000:])
        try:
            url = json.loads(state_file.read_text())["listeners"]["plain"]["url"]
            info = http_json(url + "/v1/info", timeout=2)
            if not info.get("starting", True):
                return {"url": url, "version": info["nodeVersion"]["version"], "user": TRINO_USER,
                        "catalog": "iceberg", "dir": str(d), "pid": proc.pid, "log": str(log_path)}
        except (FileNotFoundError, KeyError, urllib.error.URLError, OSError, ValueError):
            pass
        time.sleep(0.05)
    raise LabError(f"the second cluster did not become ready within 180 s; see {log_path}")


# ---------------------------------------------------------------------------- the real Trino
def trino_versions(spec: str) -> list[str]:
    """`--trino 476`, `483` or `476,483`: the real Trinos to run, the first the lab's primary."""
    versions = [v.strip() for v in spec.split(",") if v.strip()]
    unknown = [v for v in versions if v not in trinodist.SERVERS]
    if not versions or unknown or len(set(versions)) != len(versions):
        raise LabError(f"--trino {spec!r}: the lab runs Trino {' and '.join(trinodist.SERVERS)} "
                       "(one, or several comma-separated, the first the primary)")
    return versions


def prepare_real_trino(version: str) -> dict:
    """The JDK for `version` and its server, downloaded, verified and laid out (once, in the
    cache). Runs while the venvs build."""
    jdk, major = trinodist.choose_jdk(version)
    server, facts = trinodist.ensure_server(cache_dir(), version, jdk, say)
    return {"version": version, "server": server, "jdk": jdk, "jdk_major": major, **facts}


def has_delta(prep: dict) -> bool:
    """The server has the Delta Lake connector (476; see trinodist)."""
    return (Path(prep["server"]) / "plugin" / realtrino.DELTA_PLUGIN_DIR).is_dir()


def start_object_store(root: Path, runtime: Runtime, warehouse: Path) -> dict:
    """The lab's object store (objectstore.py) with the delta-rs tables of `warehouse`
    uploaded under `s3://<bucket>/warehouse/`."""
    venv = ensure_venv("s3", S3_LOCK)
    port = free_port()
    try:
        proc = objectstore.start(venv, port, root / "logs" / "s3.log")
        runtime.add("s3", proc.pid)
        url = objectstore.endpoint(port)
        files = objectstore.upload(url, warehouse, "warehouse")
    except objectstore.ObjectStoreError as e:
        raise LabError(str(e)) from None
    return {"endpoint": url, "bucket": objectstore.BUCKET, "region": objectstore.REGION,
            "access_key": objectstore.ACCESS_KEY, "secret_key": objectstore.SECRET_KEY,
            "pid": proc.pid, "uploaded_files": files}


def spawn_real_trino(prep: dict, root: Path, catalogs: dict, runtime: Runtime, tls: dict,
                     delta_s3: dict | None = None) -> tuple:
    version = prep["version"]
    rdir = root / f"trino-real-{version}"
    port, https_port = free_port(), free_port()
    # a Delta Lake catalog where the server has the connector
    if not has_delta(prep):
        delta_s3 = None
    # The benchmarks' lab keeps a short history in a larger heap (see realtrino.BENCH_HEAP).
    bench = any(name in catalogs for name in SCALE_FLEETS.values())
    heap = realtrino.BENCH_HEAP if bench else realtrino.HEAP
    realtrino.write_config(rdir / "etc", rdir / "data", port, catalogs, version, DENIED_USER,
                           COORDINATOR_ZONE, heap=heap,
                           min_expire_age=realtrino.BENCH_MIN_EXPIRE_AGE if bench else "30m",
                           tls={**tls, "https_port": https_port, "users": realtrino.TLS_USERS},
                           delta_s3=delta_s3)
    log_path = root / "logs" / f"trino-real-{version}.log"
    log = open(log_path, "ab")
    jdk = Path(prep["jdk"])
    env = {**os.environ, "JAVA_HOME": str(jdk), "PATH": f"{jdk / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    # `launcher run` execs the JVM in the foreground: the PID recorded is the JVM's
    proc = subprocess.Popen(
        [str(Path(prep["server"]) / "bin" / "launcher"), "run", f"--etc-dir={rdir / 'etc'}",
         f"--data-dir={rdir / 'data'}", f"--jvm-dir={jdk}"],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=str(rdir), env=env,
        start_new_session=True,
    )
    runtime.add(f"trino-real-{version}", proc.pid)
    return proc, port, https_port, log_path, time.monotonic(), heap, delta_s3


def finish_real_trino(prep: dict, spawned: tuple, catalogs: dict, tls: dict) -> dict:
    proc, port, https_port, log_path, t0, heap, _ = spawned
    url = f"http://127.0.0.1:{port}"
    info = realtrino.wait_ready(url, proc, log_path)
    startup = time.monotonic() - t0
    got = str(info["nodeVersion"]["version"])
    if got != prep["version"]:
        raise LabError(f"the real Trino at {url} says it is {got}, not {prep['version']} ({prep['server']})")
    say(f"real trino {got} ready in {startup:.1f} s on {url}, https://127.0.0.1:{https_port} "
        f"(JDK {prep['jdk_major']}, heap {heap})")
    user, password = next(iter(realtrino.TLS_USERS.items()))
    return {
        "url": url,
        "version": got,
        "user": TRINO_USER,
        "catalog": "iceberg",
        "catalogs": {name: str(Path(path) / "catalog.db") for name, path in catalogs.items()},
        "denied_user": DENIED_USER,
        "no_system_prefix": realtrino.NO_SYSTEM_PREFIX,
        "no_iceberg_prefix": realtrino.NO_ICEBERG_PREFIX,
        "time_zone": COORDINATOR_ZONE,
        # the same coordinator over TLS (its own CA) with the password file authenticator
        "https_url": f"https://127.0.0.1:{https_port}",
        "ca_file": tls["ca_file"],
        "tls_user": user,
        "tls_password": password,
        "tls_users": dict(realtrino.TLS_USERS),
        "pid": proc.pid,
        "heap": heap,
        "java_home": str(prep["jdk"]),
        "java_major": prep["jdk_major"],
        "server_dir": str(prep["server"]),
        "startup_s": round(startup, 1),
        "download_bytes": prep.get("downloaded_bytes", 0),
        "log": str(log_path),
        "real": True,
    }


def real_trino_tls(venv: Path, root: Path) -> dict:
    """The real Trinos' own CA and server certificate (lab/trino/tls.py, in a folder apart
    from the stand-in's: another CA)."""
    out = root / "trino-real-tls"
    proc = subprocess.run(lab_module(venv, "trino.tls", "--out", str(out)), cwd=str(REPO_ROOT), env=lab_env(),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise LabError(f"making the real Trino's certificates in {out} failed: {proc.stderr[-2000:]}")
    return {"ca_file": str(out / "ca.pem"), "cert_file": str(out / "server.pem"),
            "key_file": str(out / "server-key.pem")}


def layouts_key(live: Path, version: str) -> str:
    h = hashlib.sha256()
    h.update((LAB_ROOT / "realtrino.py").read_bytes())
    h.update((LAB_ROOT / "scenarios" / "catalog.py").read_bytes())
    h.update(f"{version}\0{live}".encode())
    return h.hexdigest()[:16]


def prepare_layouts(venv: Path, root: Path, version: str) -> dict:
    """The `layouts` warehouse (tables only Trino writes): restored from the cache when a
    copy made by the same definitions exists, else an empty pyiceberg catalog that
    `write_layouts` fills through the real Trino once it runs."""
    live = root / "warehouses" / "layouts"
    store = cache_dir() / "scenarios"
    store.mkdir(parents=True, exist_ok=True)
    tarball = store / f"layouts-{hashlib.sha256(str(live).encode()).hexdigest()[:8]}-{layouts_key(live, version)}.tar"
    if live.exists():
        shutil.rmtree(live)
    live.parent.mkdir(parents=True, exist_ok=True)
    if tarball.exists():
        subprocess.run(["tar", "-xf", str(tarball), "-C", str(live.parent)], check=True)
        return {"path": str(live), "tarball": str(tarball), "cached": True}
    live.mkdir()
    (live / "warehouse").mkdir()
    # pyiceberg's SqlCatalog creates the JDBC catalog's tables (Trino never does)
    proc = subprocess.run(
        [str(venv / "bin" / "python"), "-c",
         "import sys; from lab.scenarios.catalog import open_catalog; open_catalog(sys.argv[1])", str(live)],
        cwd=str(REPO_ROOT), env=lab_env(), capture_output=True, text=True)
    if proc.returncode != 0:
        raise LabError(f"creating the layouts catalog failed: {proc.stderr[-2000:]}")
    return {"path": str(live), "tarball": str(tarball), "cached": False}


def write_layouts(layouts: dict, trino_url: str) -> None:
    """Create the layouts through the real Trino (when not restored) and keep a pristine copy."""
    if layouts["cached"]:
        return
    failed = realtrino.create_layouts(trino_url, "layouts")
    if failed:
        raise LabError("creating the layouts through the real Trino failed:\n" + "\n".join(failed))
    live = Path(layouts["path"])
    tmp = Path(layouts["tarball"] + ".tmp")
    with tarfile.open(tmp, "w") as tf:
        tf.add(live, arcname=live.name)
    tmp.replace(layouts["tarball"])


def start_trino_proxy(upstream: str, root: Path, runtime: Runtime) -> dict:
    """The fault-injecting proxy in front of the real Trino (lab/trino/proxy.py)."""
    port = free_port()
    venv_python = sys.executable
    log_path = root / "logs" / "trino-proxy.log"
    log = open(log_path, "ab")
    proc = subprocess.Popen(
        [venv_python, "-m", "lab.trino.proxy", "--upstream", upstream, "--port", str(port),
         "--alias-host", ALIAS_HOST],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=str(REPO_ROOT), env=lab_env(),
        start_new_session=True,
    )
    runtime.add("trino-proxy", proc.pid)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LabError(f"the Trino fault proxy exited ({proc.returncode}); see {log_path}:\n"
                           + log_path.read_text(errors="replace")[-2000:])
        try:
            http_json(url + "/_lab/health", timeout=2)
            return {"proxy_url": url, "proxy_control_url": url + "/_lab"}
        except (urllib.error.URLError, OSError, ValueError):
            time.sleep(0.05)
    raise LabError(f"the Trino fault proxy did not start within 30 s; see {log_path}")


# ---------------------------------------------------------------------------- airflow
# A cold bring-up builds the run history by really running two weeks of DAG runs; on a
# loaded 2-core machine Airflow 2 has taken up to 40 minutes for it.
AIRFLOW_UP_TIMEOUT_S = {3: 1200, 2: 2700}


# `[core] test_connection` of each Airflow: one as deployed (Airflow's default, Disabled: a test
# answers 403), the other Enabled (Airflow 3.3+ also tests on a worker, enqueue-test).
TEST_CONNECTION = {3: "enabled", 2: "disabled"}


def start_airflow(major: int, venv: Path, root: Path, trino_url: str, runtime: Runtime,
                  tls: dict | None = None) -> dict:
    """One Airflow (airflow/ctl.py); `tls` ({url, user, password, ca_file}): the Trino its
    `trino_tls` connection reaches over HTTPS with a password."""
    home = root / f"airflow{major}"
    port = free_port()
    cmd = [sys.executable, str(AIRFLOW_CTL), "up", "--venv", str(venv), "--home", str(home),
           "--port", str(port), "--trino-url", trino_url, "--trino-user", TRINO_USER, "--major", str(major),
           "--test-connection", TEST_CONNECTION[major]]
    env = dict(os.environ)
    if tls:
        cmd += ["--trino-tls-url", tls["url"], "--trino-tls-user", tls["user"], "--trino-ca-file", tls["ca_file"]]
        env["FLOE_LAB_TRINO_TLS_PASSWORD"] = tls["password"]
    with runtime._lock:
        runtime.data.setdefault("airflow_homes", [])
        if str(home) not in runtime.data["airflow_homes"]:
            runtime.data["airflow_homes"].append(str(home))
            runtime.save()
    log = root / "logs" / f"airflow{major}-ctl.log"
    with open(log, "w") as err:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                              cwd=str(REPO_ROOT), text=True, timeout=AIRFLOW_UP_TIMEOUT_S[major], env=env)
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip().startswith("{")]
    if proc.returncode != 0 or not lines:
        raise LabError(f"airflow/ctl.py up (Airflow {major}) failed (exit {proc.returncode}); see {log}:\n"
                       + log.read_text()[-3000:] + proc.stdout[-1000:])
    out = json.loads(lines[-1])
    prefix = "airflow" if major == 3 else "airflow2"
    pids = out.get("pids") or {}
    if isinstance(pids, list):
        pids = {str(i): p for i, p in enumerate(pids)}
    for name, pid in pids.items():
        if isinstance(pid, int) and pid > 0:
            runtime.add(f"{prefix}-{name}", pid)
    info = {k: v for k, v in out.items() if k != "pids"}
    info.setdefault("home", str(home))
    return info


def start_airflow_proxy(key: str, upstream: str, root: Path, runtime: Runtime) -> dict:
    """The fault-injecting reverse proxy in front of one Airflow (standard library only)."""
    state_file = root / f"{key}-proxy.json"
    state_file.unlink(missing_ok=True)
    log = open(root / "logs" / f"{key}-proxy.log", "ab")
    proc = subprocess.Popen(
        [sys.executable, str(AIRFLOW_PROXY), "--upstream", upstream, "--state-file", str(state_file)],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=str(REPO_ROOT), start_new_session=True,
    )
    runtime.add(f"{key}-proxy", proc.pid)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LabError(f"the {key} proxy exited ({proc.returncode}); see {root / 'logs' / f'{key}-proxy.log'}")
        if state_file.exists():
            state = json.loads(state_file.read_text())
            try:
                http_json(state["control_url"] + "/health", timeout=2)
                return {"proxy_url": state["url"], "proxy_control_url": state["control_url"]}
            except (urllib.error.URLError, OSError, ValueError):
                pass
        time.sleep(0.05)
    raise LabError(f"the {key} proxy did not start within 30 s")


def airflow_down(homes: list[str]) -> None:
    if not AIRFLOW_CTL.exists():
        return
    for home in homes:
        if Path(home).exists():
            subprocess.run([sys.executable, str(AIRFLOW_CTL), "down", "--home", home],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)


# ---------------------------------------------------------------------------- commands
def running_state(root: Path) -> tuple[dict | None, Runtime]:
    runtime = Runtime(root)
    lab_json = root / "lab.json"
    lab = None
    if lab_json.exists():
        try:
            lab = json.loads(lab_json.read_text())
        except ValueError:
            lab = None
    return lab, runtime


def cmd_up(args) -> int:
    if args.fleets:
        args.scale = True
    root = lab_dir()
    lab, runtime = running_state(root)
    procs = runtime.processes
    if lab is not None and procs and all(alive(r["pid"], r.get("started")) for r in procs.values()):
        say(f"already running (lab.json at {root / 'lab.json'}); `down` first to restart")
        return 0
    if procs or lab is not None:
        say("cleaning up a previous lab that is no longer complete")
        do_down(root, quiet=True)

    airflow_majors = [] if args.no_airflow else [3]
    if args.airflow2 and not args.no_airflow:
        airflow_majors.append(2)
    for major in airflow_majors:
        missing = [p for p in (AIRFLOW_CTL, AIRFLOW_LOCKS[major]) if not p.exists()]
        if missing:
            raise LabError("Airflow is not available in this checkout (missing "
                           + ", ".join(str(p.relative_to(REPO_ROOT)) for p in missing)
                           + "); start the lab with --no-airflow")
    stub = bool(args.stub_engine)
    if not stub:
        missing = [p for p in (GENERATOR, LAB_ROOT / "engine" / "__init__.py") if not p.exists()]
        if missing:
            raise LabError("the engine or the scenario generator is missing ("
                           + ", ".join(str(p.relative_to(REPO_ROOT)) for p in missing)
                           + "); `--stub-engine` starts the server on a stand-in engine without a warehouse")

    t_total = time.monotonic()
    timings: list[tuple[str, float]] = []
    root.mkdir(parents=True, exist_ok=True)
    (root / "logs").mkdir(exist_ok=True)
    runtime = Runtime(root)
    runtime.data = {"processes": {}, "airflow_homes": [], "started_at": utc_now()}
    runtime.save()
    try:
        # The Airflow venvs build while the lab venv, the scenarios and Trino come up.
        airflow_venvs: dict[int, Path] = {}
        airflow_errors: list[BaseException] = []
        t_airflow_venvs = time.monotonic()

        def build_airflow_venv(m: int) -> None:
            try:
                airflow_venvs[m] = ensure_venv(f"airflow{m}", AIRFLOW_LOCKS[m])
            except BaseException as e:  # noqa: BLE001 - re-raised in the main thread
                airflow_errors.append(e)

        def build_airflow_venvs() -> None:
            # Side by side: a first build is mostly pip waiting on downloads, one at a time.
            builders = [threading.Thread(target=build_airflow_venv, args=(m,), name=f"airflow{m}-venv")
                        for m in airflow_majors]
            for th in builders:
                th.start()
            for th in builders:
                th.join()
            if airflow_majors:
                timings.append(("airflow venvs", time.monotonic() - t_airflow_venvs))

        builder = threading.Thread(target=build_airflow_venvs, name="airflow-venvs")
        builder.start()

        # The real Trinos are fetched (once) and laid out while the venvs build, side by side.
        real = not stub and not args.no_real_trino
        versions = trino_versions(args.trino) if real else []
        real_prep: dict[str, dict] = {}
        real_errors: list[BaseException] = []

        def prepare_real(version: str) -> None:
            t0 = time.monotonic()
            try:
                real_prep[version] = prepare_real_trino(version)
            except BaseException as e:  # noqa: BLE001 - re-raised in the main thread
                real_errors.append(e)
                return
            how = "cached" if real_prep[version].get("cached") else "download"
            timings.append((f"trino {version} {how}", time.monotonic() - t0))

        preparers = [threading.Thread(target=prepare_real, args=(v,), name=f"real-trino-{v}") for v in versions]
        for th in preparers:
            th.start()

        t = time.monotonic()
        lab_venv = ensure_venv("lab", LAB_LOCK)
        timings.append(("lab venv", time.monotonic() - t))

        scenario = None
        scale = None
        pyfleet = None
        delta_scenario = None
        fleets: dict[str, dict] = {}
        catalogs: dict[str, str] = {}
        if not stub:
            t = time.monotonic()
            scenario = ensure_scenario(lab_venv, "seed", ["--full"] if args.full else [], root)
            catalogs["iceberg"] = scenario["path"]
            # a small fleet written the pyiceberg way, beside the seed: the survey tests run
            # on it as on the seed (its tables' $entries the real 476 fails)
            pyfleet = ensure_scenario(lab_venv, PYFLEET, ["--writers", "pyiceberg", "--tables", "36"],
                                      root, scenario="scale")
            catalogs[PYFLEET] = pyfleet["path"]
            # Delta Lake tables written by delta-rs, for the real Trino's Delta Lake catalog
            # (not the stand-in's: it serves Iceberg only)
            delta_fleet = args.scale and "delta" in (args.fleets or [])
            delta_scenario = ensure_scenario(
                lab_venv, "delta", ["--delta-fleet", str(DELTA_FLEET_TABLES)] if delta_fleet else [], root,
                scenario="delta")
            if delta_fleet:
                fleets["delta"] = {"catalog": realtrino.DELTA_CATALOG, "writers": "delta",
                                   "expected": delta_scenario["expected"], "path": delta_scenario["path"],
                                   "generated_at": delta_scenario["generated_at"],
                                   "cached": delta_scenario["cached"]}
            if args.scale:
                for writers in [w for w in (args.fleets or ["mixed"]) if w != "delta"]:
                    name = SCALE_FLEETS[writers]
                    t_fleet = time.monotonic()
                    extra = [] if writers == "mixed" else ["--writers", writers]
                    fleet = ensure_scenario(lab_venv, name, extra, root, scenario="scale")
                    fleets[writers] = {"catalog": name, "writers": writers, "expected": fleet["expected"],
                                       "path": fleet["path"], "generated_at": fleet["generated_at"],
                                       "cached": fleet["cached"],
                                       "up_s": round(time.monotonic() - t_fleet, 1)}
                    catalogs[name] = fleet["path"]
                scale = fleets.get("mixed")
            timings.append(("scenarios", time.monotonic() - t))

        spawned: dict[str, tuple] = {}
        layouts: dict = {}
        tls: dict = {}
        delta_s3: dict | None = None
        if real:
            for th in preparers:
                th.join()
            if real_errors:
                e = real_errors[0]
                raise LabError(str(e)) if isinstance(e, realtrino.TrinoSetupError) else e
            t = time.monotonic()
            layouts = prepare_layouts(lab_venv, root, versions[0])
            timings.append(("layouts", time.monotonic() - t))
            tls = real_trino_tls(lab_venv, root)
            if delta_scenario is not None and any(has_delta(real_prep[v]) for v in versions):
                t = time.monotonic()
                delta_s3 = start_object_store(root, runtime, Path(delta_scenario["path"]) / "warehouse")
                timings.append(("object store", time.monotonic() - t))
            # the JVMs start while the stand-in does
            for v in versions:
                spawned[v] = spawn_real_trino(real_prep[v], root, {**catalogs, "layouts": layouts["path"]},
                                              runtime, tls, delta_s3=delta_s3)

        t = time.monotonic()
        # the stand-in serves the Trino-written layouts too (the parity run compares them)
        stand_in = start_trino(lab_venv, root, {**catalogs, **({"layouts": layouts["path"]} if spawned else {})},
                               runtime, stub)
        timings.append(("stand-in", time.monotonic() - t))

        # The second cluster starts from the seed's catalog as it is now, before any test
        # or demo writes to the first.
        second = None
        if scenario is not None and not args.no_second:
            t = time.monotonic()
            second = start_second(lab_venv, root, scenario["path"], runtime)
            timings.append(("second", time.monotonic() - t))

        trinos: dict[str, dict] = {}
        if spawned:
            for v in versions:
                try:
                    trinos[v] = finish_real_trino(real_prep[v], spawned[v], catalogs, tls)
                except realtrino.TrinoSetupError as e:
                    raise LabError(str(e)) from None
                timings.append((f"real trino {v}", time.monotonic() - spawned[v][4]))
            # the primary: what every test reads unless it asks for another version
            trino = trinos[versions[0]]
            t = time.monotonic()
            write_layouts(layouts, trino["url"])
            if not layouts["cached"]:
                timings.append(("layouts written", time.monotonic() - t))
                # the stand-in read an empty catalog at its start
                req = urllib.request.Request(stand_in["control_url"] + "/engine/reload", data=b"{}", method="POST",
                                             headers={"Content-Type": "application/json"})
                urllib.request.urlopen(req, timeout=120).read()
            for v, entry in trinos.items():
                if spawned[v][6] is None:
                    continue
                t = time.monotonic()
                expected = json.loads(Path(delta_scenario["expected"]).read_text())
                failed = realtrino.create_delta_tables(entry["url"], spawned[v][6], expected["tables"])
                if failed:
                    raise LabError(f"the Delta Lake tables on the real Trino {v} failed:\n" + "\n".join(failed))
                entry["delta"] = {"catalog": realtrino.DELTA_CATALOG, "expected": delta_scenario["expected"],
                                  "path": delta_scenario["path"], "s3": spawned[v][6],
                                  "trino_written": [realtrino.TRINO_DELTA_TABLE]}
                timings.append((f"delta tables on {v}", time.monotonic() - t))
            for entry in trinos.values():
                entry["layouts"] = {"catalog": "layouts", "schema": "zoo", "path": layouts["path"],
                                    "tables": [name.strip('"').replace('""', '"').lower()
                                               for name, _ in realtrino.LAYOUT_TABLES]}
            if (LAB_ROOT / "trino" / "proxy.py").exists():
                trino.update(start_trino_proxy(trino["url"], root, runtime))
        else:
            trino = stand_in

        # The seed incident starts with its dashboard's query: a few runs of it while Airflow
        # comes up put it in the coordinator's history before anyone opens floe.
        dash_runs: list[dict] = []
        dash_errors: list[BaseException] = []
        dasher = None
        if scenario is not None:
            def run_dashboard() -> None:
                t0 = time.monotonic()
                try:
                    dash_runs.extend(dashboard.run(trino["url"], DASHBOARD_RUNS_AT_START))
                except BaseException as e:  # noqa: BLE001 - re-raised in the main thread
                    dash_errors.append(e)
                timings.append(("dashboard", time.monotonic() - t0))

            dasher = threading.Thread(target=run_dashboard, name="dashboard")
            dasher.start()

        builder.join()
        if airflow_errors:
            raise airflow_errors[0]

        # Their trino_tls connection: the real Trino's HTTPS listener (else the stand-in's).
        if trinos:
            airflow_tls = {"url": trino["https_url"], "user": trino["tls_user"], "password": trino["tls_password"],
                           "ca_file": trino["ca_file"]}
        else:
            user, password = next(iter(BASIC_USERS.items()))
            airflow_tls = {"url": stand_in["https_url"], "user": user, "password": password,
                           "ca_file": stand_in["ca_file"]}
        # Airflow 3 and 2 come up side by side (mostly waiting on their schedulers).
        airflow: dict[int, dict] = {}
        failures: list[BaseException] = []

        def bring_up(major: int) -> None:
            t0 = time.monotonic()
            try:
                info = start_airflow(major, airflow_venvs[major], root, trino["url"], runtime, airflow_tls)
                key = "airflow" if major == 3 else "airflow2"
                info.update(start_airflow_proxy(key, info["url"], root, runtime))
                airflow[major] = info
            except BaseException as e:  # noqa: BLE001 - re-raised in the main thread
                failures.append(e)
            timings.append((f"airflow{major}", time.monotonic() - t0))

        starters = [threading.Thread(target=bring_up, args=(m,), name=f"airflow{m}") for m in airflow_majors]
        for th in starters:
            th.start()
        for th in starters:
            th.join()
        if failures:
            raise failures[0]
        if dasher is not None:
            dasher.join()
            if dash_errors:
                e = dash_errors[0]
                raise LabError(str(e)) if isinstance(e, dashboard.DashboardError) else e

        # Debian's Prometheus server and promtool, for floe serve's tests (they start it).
        try:
            prom = prometheus.ensure()
        except prometheus.PrometheusSetupError as e:
            raise LabError(str(e)) from None
        lab_doc = {
            "started_at": runtime.data["started_at"],
            "lab_dir": str(root),
            "trino": trino,
            # every real Trino by version (the primary is `trino`), and the primary over TLS
            "trinos": trinos,
            "trino_tls": None if not trinos else {
                "url": trino["https_url"], "ca_file": trino["ca_file"], "user": trino["tls_user"],
                "password": trino["tls_password"], "version": trino["version"]},
            "stand_in": stand_in,
            "second": second,
            "scenario": None if scenario is None else {
                "name": scenario["name"], "generated_at": scenario["generated_at"],
                "expected": scenario["expected"], "path": scenario["path"]},
            "scale": None if scale is None else {
                "catalog": "scale", "expected": scale["expected"], "path": scale["path"],
                "generated_at": scale["generated_at"]},
            # every fleet of the scale scenario served, by writer (`--fleets`)
            "fleets": fleets,
            # the small pyiceberg-written fleet every lab serves beside the seed
            "pyfleet": None if pyfleet is None else {
                "catalog": PYFLEET, "expected": pyfleet["expected"], "path": pyfleet["path"],
                "generated_at": pyfleet["generated_at"]},
            "airflow": airflow.get(3),
            "airflow2": airflow.get(2),
            "dashboard": None if scenario is None else {
                "user": dashboard.USER, "source": dashboard.SOURCE, "query": dashboard.QUERY,
                "url": trino["url"], "runs": dash_runs},
            "prometheus": prom,
            "pids": {name: rec["pid"] for name, rec in runtime.processes.items()},
        }
        tmp = root / "lab.json.tmp"
        tmp.write_text(json.dumps(lab_doc, indent=2) + "\n")
        tmp.replace(root / "lab.json")
    except BaseException:
        say("start failed; stopping what was started")
        do_down(root, quiet=True)
        raise
    total = time.monotonic() - t_total
    for name, secs in timings:
        say(f"  {name:<10} {secs:6.1f} s")
    say(f"  {'total':<10} {total:6.1f} s")
    say(f"up: trino {trino['url']} (version {trino['version']}), stand-in {stand_in['url']} "
        f"(https {stand_in['https_url']})"
        + (f", second cluster {second['url']}" if second else "")
        + (f", airflow {airflow[3].get('url')}" if 3 in airflow else "")
        + f"; {root / 'lab.json'}")
    for i, r in enumerate(dash_runs, 1):
        say(f"  dashboard run {i} on {trino['url']}: {dashboard.describe(r)}")
    return 0


def cmd_dashboard(args) -> int:
    """The dashboard's query on the lab's coordinator: `--runs` times, then every `--every`
    seconds until SIGTERM or ctrl-c (a dashboard that refreshes)."""
    lab, _ = running_state(lab_dir())
    if lab is None:
        raise LabError(f"the lab is not running ({lab_dir() / 'lab.json'} not found)")
    url = args.url or lab["trino"]["url"]
    # stopped by PID (the demo's end): a run in flight is left to the coordinator, which
    # abandons a query whose client stopped polling
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    n = 0
    while True:
        n += 1
        try:
            r = dashboard.run_once(url)
            say(f"dashboard run {n} on {url}: {dashboard.describe(r)}")
        except (dashboard.DashboardError, urllib.error.URLError, OSError, ValueError) as e:
            if not args.every:
                raise LabError(str(e)) from None
            say(f"dashboard run {n} on {url} failed: {e}")
        if n < args.runs:
            continue
        if not args.every:
            return 0
        time.sleep(args.every)


def do_down(root: Path, quiet: bool = False) -> bool:
    lab, runtime = running_state(root)
    records = dict(runtime.processes)
    if lab is not None:
        for name, pid in (lab.get("pids") or {}).items():
            records.setdefault(name, {"pid": pid, "started": None})
    was_running = any(alive(r["pid"], r.get("started")) for r in records.values())
    airflow_down(runtime.data.get("airflow_homes", []))
    stop_processes(records)
    (root / "lab.json").unlink(missing_ok=True)
    runtime.path.unlink(missing_ok=True)
    if not quiet:
        say("stopped" if was_running else "nothing was running")
    return was_running


def cmd_down(args) -> int:  # noqa: ARG001
    do_down(lab_dir())
    return 0


def cmd_status(args) -> int:  # noqa: ARG001
    root = lab_dir()
    lab, runtime = running_state(root)
    procs = runtime.processes
    if lab is None and not procs:
        say("not running")
        return 0
    say(f"lab dir {root}" + ("" if lab is not None else " (no lab.json: incomplete start)"))
    all_alive = True
    for name, rec in procs.items():
        ok = alive(rec["pid"], rec.get("started"))
        all_alive &= ok
        say(f"  {name:<18} pid {rec['pid']:<8} {'running' if ok else 'DEAD'}")
    if lab is not None:
        trino = lab["trino"]
        stand_in = lab.get("stand_in") or trino
        for label, srv in ((("trino", trino),) if stand_in is trino else (("trino", trino), ("stand-in", stand_in))):
            try:
                info = http_json(srv["url"] + "/v1/info")
                say(f"  {label} {srv['url']}: version {info['nodeVersion']['version']}, "
                    f"starting={info['starting']}, uptime {info['uptime']}")
            except (urllib.error.URLError, OSError, ValueError) as e:
                all_alive = False
                say(f"  {label} {srv['url']}: not answering ({e})")
        for real in (lab.get("trinos") or {}).values():
            rss = realtrino.rss_bytes(int(real["pid"]))
            say(f"  real trino {real['version']}{' (primary)' if real['url'] == trino['url'] else ''}: "
                f"{real['url']}, {real['https_url']} (password, CA {real['ca_file']})")
            say(f"    pid {real['pid']}, heap {real['heap']}, "
                + (f"RSS {rss / 2**20:.0f} MiB" if rss else "gone"))
            say(f"    JDK {real['java_major']} at {real['java_home']}; started in {real['startup_s']} s")
            for name, db in (real.get("catalogs") or {}).items():
                say(f"    catalog {name}: Iceberg JDBC catalog on {db}")
        if trino.get("real"):
            if trino.get("proxy_url"):
                say(f"    fault proxy: {trino['proxy_url']}")
        for k, v in (stand_in.get("listeners") or {}).items():
            say(f"    stand-in {k}: {v}")
        say(f"    stand-in https: {stand_in.get('https_url')}")
        if lab.get("second"):
            sec = lab["second"]
            try:
                info = http_json(sec["url"] + "/v1/info")
                say(f"  second cluster {sec['url']}: version {info['nodeVersion']['version']}, "
                    f"catalog copy in {sec['dir']}")
            except (urllib.error.URLError, OSError, ValueError) as e:
                all_alive = False
                say(f"  second cluster {sec['url']}: not answering ({e})")
        for key in ("airflow", "airflow2"):
            if lab.get(key):
                say(f"  {key}: {lab[key].get('url')} (version {lab[key].get('version')}), "
                    f"fault proxy {lab[key].get('proxy_url')}")
        if lab.get("scenario"):
            say(f"  scenario {lab['scenario']['name']} generated at {lab['scenario']['generated_at']}")
        for writers, fleet in (lab.get("fleets") or {}).items():
            say(f"  scale fleet {writers}: catalog {fleet['catalog']}, generated at {fleet['generated_at']}")
    return 0 if all_alive else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="labctl", description="the floe lab")
    sub = ap.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="start the lab")
    up.add_argument("--scale", action="store_true", help="also generate and serve the scale catalog")
    up.add_argument("--fleets", type=parse_fleets, default=None, metavar="mixed,pyiceberg,trino,delta",
                    help="with --scale: the fleets by writer to serve, each its own catalog "
                         "(mixed: scale, pyiceberg: scale_pyiceberg, trino: scale_trino; default mixed); "
                         f"delta: {DELTA_FLEET_TABLES} delta-rs tables more in the Delta Lake catalog")
    up.add_argument("--airflow2", action="store_true", help="also start Airflow 2")
    up.add_argument("--no-airflow", action="store_true", help="start no Airflow")
    up.add_argument("--no-second", action="store_true",
                    help="start no second cluster (the stand-in over a copy of the seed's catalog)")
    up.add_argument("--full", action="store_true", help="the full-size seed scenario")
    up.add_argument("--trino", default=trinodist.DEFAULT_VERSION,
                    help="the real Trino(s): 476, 483, or both comma-separated, the first the primary "
                         f"(default {trinodist.DEFAULT_VERSION})")
    up.add_argument("--no-real-trino", action="store_true",
                    help="serve only the stand-in (no JVM): `trino` in lab.json is the stand-in")
    up.add_argument("--stub-engine", action="store_true",
                    help="serve a stand-in engine (no warehouse); for protocol work only")
    sub.add_parser("down", help="stop the lab")
    sub.add_parser("status", help="show what runs")
    dash = sub.add_parser("dashboard", help="run the seed dashboard's query on the lab's coordinator")
    dash.add_argument("--runs", type=int, default=1, help="runs one after the other (default 1)")
    dash.add_argument("--every", type=float, default=0.0,
                      help="then one run every SECONDS until SIGTERM (a dashboard that refreshes)")
    dash.add_argument("--url", help="another coordinator than lab.json's trino.url")
    args = ap.parse_args(argv)
    try:
        return {"up": cmd_up, "down": cmd_down, "status": cmd_status,
                "dashboard": cmd_dashboard}[args.cmd](args)
    except LabError as e:
        print(f"lab: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

"""Debian's `prometheus` package for the lab: the server and `promtool` that `floe serve`'s
tests run (standard library only).

    python3 tests/lab/prometheus.py ensure     # prints {"version", "prometheus", "promtool"}

The package is fetched once with `apt-get download prometheus` and unpacked with `dpkg-deb -x`
into `$FLOE_CACHE_DIR/prometheus/<package version>/`: nothing is installed on the machine, so no
maintainer script runs and no system service starts (the package's postinst would start one
listening on every interface). The two binaries need only the C library. The tests start the
server themselves, bound to 127.0.0.1 with a data directory of their own, and stop it by PID.

labctl's `up` calls `ensure` and writes its answer into lab.json (`prometheus`).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PACKAGE = "prometheus"


class PrometheusSetupError(Exception):
    pass


def cache_root() -> Path:
    base = os.environ.get("FLOE_CACHE_DIR")
    if base:
        return Path(base) / "prometheus"
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "floe" / "prometheus"


def _run(cmd: list[str], cwd: Path | None = None) -> str:
    try:
        out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
    except FileNotFoundError:
        raise PrometheusSetupError(
            f"{cmd[0]} is not on PATH: the lab takes Prometheus from Debian's `{PACKAGE}` package "
            "(apt-get download and dpkg-deb, on a Debian or Ubuntu machine)") from None
    if out.returncode != 0:
        raise PrometheusSetupError(f"`{' '.join(cmd)}` failed ({out.returncode}): {out.stderr.strip()[-800:]}")
    return out.stdout


def candidate() -> str:
    """The package version apt would fetch (`apt-get update` once when apt knows none)."""
    for attempt in range(2):
        policy = _run(["apt-cache", "policy", PACKAGE])
        for line in policy.splitlines():
            line = line.strip()
            if line.startswith("Candidate:"):
                version = line.split(":", 1)[1].strip()
                if version and version != "(none)":
                    return version
        if attempt == 0:
            _run(["apt-get", "update", "-qq"])
    raise PrometheusSetupError(f"apt knows no `{PACKAGE}` package (apt-cache policy {PACKAGE})")


def _paths(home: Path) -> dict:
    return {"prometheus": str(home / "usr" / "bin" / "prometheus"),
            "promtool": str(home / "usr" / "bin" / "promtool")}


def _version_of(binary: str) -> str:
    # "prometheus, version 2.42.0+ds (branch: …)"
    first = _run([binary, "--version"]).splitlines()[0]
    return first.split("version", 1)[1].split()[0]


def ensure() -> dict:
    """The unpacked package (fetched and unpacked the first time, one lab at a time)."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "fetch.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        known = sorted(p for p in root.iterdir() if (p / "usr" / "bin" / "promtool").exists())
        try:
            version = candidate()
        except PrometheusSetupError:
            if not known:
                raise
            version = known[-1].name  # offline: the newest unpacked one
        home = root / version.replace(":", "_")
        if not (home / "usr" / "bin" / "promtool").exists():
            with tempfile.TemporaryDirectory(dir=root) as tmp:
                _run(["apt-get", "download", f"{PACKAGE}={version}"], cwd=Path(tmp))
                debs = list(Path(tmp).glob(f"{PACKAGE}_*.deb"))
                if len(debs) != 1:
                    raise PrometheusSetupError(f"apt-get download left {debs} in {tmp}")
                unpacked = Path(tmp) / "x"
                _run(["dpkg-deb", "-x", str(debs[0]), str(unpacked)])
                shutil.rmtree(home, ignore_errors=True)
                unpacked.rename(home)
        paths = _paths(home)
        for p in paths.values():
            if not os.access(p, os.X_OK):
                raise PrometheusSetupError(f"{p} is missing or not executable (remove {home} to fetch it again)")
        return {"package": version, "version": _version_of(paths["prometheus"]), **paths}


def main(argv: list[str]) -> int:
    if argv[1:] != ["ensure"]:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        print(json.dumps(ensure()))
    except PrometheusSetupError as e:
        print(f"prometheus: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Shared fixtures for the engine tests: a seed warehouse generated once per test run (or the
one named by FLOE_ENGINE_TEST_SEED), and helpers that call the engine directly (no HTTP).

A fresh warehouse is generated into a temporary directory because several tests mutate
tables; they do so on clones (`control("clone_table")`) as the lab's own tests must.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ..common.errors import TrinoError
from ..engine.api import Session

LAB_ROOT = Path(__file__).resolve().parents[1]          # tests/lab: the `lab` package
REPO_ROOT = LAB_ROOT.parents[1]

_STATE: dict = {}


def generate(*args: str) -> None:
    """Run the scenario generator as labctl does: `python -m lab.scenarios.generate` from the
    repository root, with the lab package's parent directory on PYTHONPATH."""
    path = os.pathsep.join(p for p in (str(LAB_ROOT.parent), os.environ.get("PYTHONPATH")) if p)
    subprocess.run([sys.executable, "-m", "lab.scenarios.generate", *args], check=True, cwd=str(REPO_ROOT),
                   env={**os.environ, "PYTHONPATH": path})

_LOCK = threading.Lock()


def seed_dir(tmp_root: Path) -> Path:
    """Generate the seed scenario once per process."""
    with _LOCK:
        if "seed" in _STATE:
            return _STATE["seed"]
        given = os.environ.get("FLOE_ENGINE_TEST_SEED")
        if given:
            d = Path(given).resolve()
        else:
            d = tmp_root / "seed"
            generate("--scenario", "seed", "--out", str(d))
        _STATE["seed"] = d
        return d


def shared_engine(tmp_root: Path):
    from ..engine import load_engine

    with _LOCK:
        if "engine" in _STATE:
            return _STATE["engine"]
    d = seed_dir(tmp_root)
    eng = load_engine({"iceberg": str(d)}, prewarm=False)
    with _LOCK:
        _STATE.setdefault("engine", eng)
        return _STATE["engine"]


@pytest.fixture(scope="session")
def seed(tmp_path_factory) -> Path:
    return seed_dir(tmp_path_factory.getbasetemp())


@pytest.fixture(scope="session")
def engine(tmp_path_factory):
    return shared_engine(tmp_path_factory.getbasetemp())


@pytest.fixture(scope="session")
def expected(engine) -> dict:
    return engine.control("expected", {"catalog": "iceberg"})


def session(**kw) -> Session:
    base = dict(user="floe", catalog="iceberg", schema="zoning", time_zone="UTC", server_version=480,
                query_id="20261129_000000_00000_tests")
    base.update(kw)
    return Session(**base)


def run(engine, sql: str, progress=None, cancelled=None, **kw):
    return engine.execute(sql, session(**kw), progress or (lambda p: None), cancelled or threading.Event())


def fails(engine, sql: str, **kw) -> TrinoError:
    with pytest.raises(TrinoError) as info:
        run(engine, sql, **kw)
    return info.value


def one(engine, sql: str, **kw):
    r = run(engine, sql, **kw)
    assert len(r.rows) == 1, r.rows
    return r.rows[0]


def facts(expected: dict, name: str) -> dict:
    return expected["tables"][name]


_clones = iter(range(10_000))


def clone(engine, source: str) -> str:
    """An isolated copy of a seed table; returns "scratch.<name>"."""
    target = f"scratch.t{next(_clones)}_{os.getpid()}_{source.split('.')[-1].replace(' ', '_')[:12]}"
    target = "".join(c if (c.isalnum() or c in "._") else "_" for c in target)
    engine.control("clone_table", {"source": source, "target": target})
    return target

"""The lab's venvs heal: an interrupted build never leaves a venv that later runs reuse."""

import importlib.util
import subprocess
from pathlib import Path

import pytest

# Reads and writes only what it makes itself (its own users, tables, servers and
# caches): runs beside floe's tests (see conftest.py).
pytestmark = pytest.mark.beside_suite

LABCTL = Path(__file__).resolve().parents[1] / "labctl.py"


@pytest.fixture()
def labctl(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOE_CACHE_DIR", str(tmp_path / "cache"))
    spec = importlib.util.spec_from_file_location("labctl_under_test", LABCTL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    lock = tmp_path / "empty.lock"
    lock.write_text("# no packages: the venv and its pip are what is tested\n")
    return mod, lock


def venv_path(mod, lock) -> Path:
    return mod.cache_dir() / "venvs" / f"t-{mod.sha256_file(lock)[:12]}"


def test_a_half_made_venv_is_rebuilt_not_completed_in_place(labctl):
    mod, lock = labctl
    venv = venv_path(mod, lock)
    # What a ctrl-c during `python -m venv` left behind: a python but no pip, no marker.
    subprocess.run([mod.sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    assert not (venv / "bin" / "pip").exists()
    got = mod.ensure_venv("t", lock)
    assert got == venv
    assert (venv / ".floe-complete").exists()
    out = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "--version"],
                         capture_output=True, text=True, check=True)
    assert "pip" in out.stdout
    # It was built elsewhere and renamed: its console scripts point at the final place.
    pip = venv / "bin" / "pip"
    head = pip.read_text().splitlines()[0]
    assert str(venv) in head and ".building-" not in head, head
    out = subprocess.run([str(pip), "--version"], capture_output=True, text=True, check=True)
    assert str(venv) in out.stdout
    assert not list(venv.parent.glob(".*.building-*"))


def test_an_interrupted_build_leaves_nothing_in_place(labctl, monkeypatch):
    mod, lock = labctl
    venv = venv_path(mod, lock)
    real_run = mod.subprocess.run

    def interrupted(cmd, *a, **kw):
        if "pip" in cmd:
            raise KeyboardInterrupt
        return real_run(cmd, *a, **kw)

    monkeypatch.setattr(mod.subprocess, "run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        mod.ensure_venv("t", lock)
    assert not venv.exists()
    assert not list(venv.parent.glob(".*.building-*"))
    monkeypatch.setattr(mod.subprocess, "run", real_run)
    # A leftover of a build killed outright (SIGKILL: no cleanup ran) is swept up too.
    (venv.parent / f".{venv.name}.building-999999").mkdir()
    assert mod.ensure_venv("t", lock) == venv
    assert not list(venv.parent.glob(".*.building-*"))

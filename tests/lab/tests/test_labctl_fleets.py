"""`labctl up --fleets`: the scale scenario's fleets by writer, each a catalog of its own,
each generated and cached apart (a fleet never replaces another's pristine copy)."""

import argparse
import importlib.util
from pathlib import Path

import pytest

# Reads and writes only what it makes itself (its own users, tables, servers and
# caches): runs beside floe's tests (see conftest.py).
pytestmark = pytest.mark.beside_suite

LABCTL = Path(__file__).resolve().parents[1] / "labctl.py"


@pytest.fixture()
def labctl(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOE_CACHE_DIR", str(tmp_path / "cache"))
    spec = importlib.util.spec_from_file_location("labctl_fleets_under_test", LABCTL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_fleets_parse_to_their_catalogs(labctl):
    assert labctl.parse_fleets("pyiceberg, trino,pyiceberg") == ["pyiceberg", "trino"]
    assert [labctl.SCALE_FLEETS[f] for f in labctl.parse_fleets("mixed,pyiceberg,trino")] == [
        "scale", "scale_pyiceberg", "scale_trino"]
    for bad in ("", "spark", "mixed,java"):
        with pytest.raises(argparse.ArgumentTypeError):
            labctl.parse_fleets(bad)


def test_each_fleet_has_its_own_cache_key(labctl, tmp_path):
    """The key covers the generator's arguments and the live path: the pyiceberg fleet's
    copy is not the mixed one's, and the mixed one's arguments are what they always were."""
    root = tmp_path / "lab"
    lock = tmp_path / "lock"
    lock.write_text("x\n")
    keys = {
        name: labctl.scenario_key(["--scenario", "scale", *extra], root / "warehouses" / name, lock)
        for name, extra in (("scale", []), ("scale_pyiceberg", ["--writers", "pyiceberg"]),
                            ("scale_trino", ["--writers", "trino"]))
    }
    assert len(set(keys.values())) == 3

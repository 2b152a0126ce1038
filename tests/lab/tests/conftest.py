"""Shared fixtures for the lab's own tests. They need a running lab (`cargo xtask lab up`);
a missing lab is an error, never a skip."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

LAB_ROOT = Path(__file__).resolve().parents[1]          # tests/lab
REPO_ROOT = LAB_ROOT.parents[1]
if str(LAB_ROOT) not in sys.path:
    sys.path.insert(0, str(LAB_ROOT))


def lab_dir() -> Path:
    return Path(os.environ.get("FLOE_LAB_DIR", REPO_ROOT / ".lab"))


@pytest.fixture(scope="session")
def lab() -> dict:
    path = lab_dir() / "lab.json"
    if not path.exists():
        pytest.fail(f"{path} not found: the lab is not running (start it with `cargo xtask lab up`)")
    return json.loads(path.read_text())

#!/usr/bin/env python3
"""Generate a scenario warehouse for the lab.

    PYTHONPATH=tests python -m lab.scenarios.generate --scenario seed|scale|delta --out DIR [--full]
        [--tables N] [--writers mixed|pyiceberg|trino]

DIR receives `catalog.db` (pyiceberg SqlCatalog on sqlite), `warehouse/` and `expected.json`.
Snapshot timestamps are relative to the generation time (the scenario clock starts at "now"
and every commit is stamped with the time the scenario says it happened).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

from . import expected as expected_mod
from .catalog import open_catalog


def _clean(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name in ("catalog.db", "expected.json"):
        p = out / name
        if p.exists():
            p.unlink()
    if (out / "warehouse").exists():
        shutil.rmtree(out / "warehouse")
    (out / "warehouse").mkdir()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", choices=["seed", "scale", "delta"], required=True)
    ap.add_argument("--out", required=True, help="scenario directory (created or replaced)")
    ap.add_argument("--full", action="store_true", help="seed: ~18,000 files in zoning.documents instead of ~2,000")
    ap.add_argument("--now", type=float, default=None, help="scenario clock origin, epoch seconds (default: now)")
    ap.add_argument("--seed", type=int, default=20261129, help="random seed")
    ap.add_argument("--tables", type=int, default=1000, help="scale: number of tables")
    ap.add_argument("--delta-fleet", type=int, default=0,
                    help="delta: that many more tables under schemas fleet_0..fleet_3 (the fleet bench's)")
    ap.add_argument("--writers", choices=["mixed", "pyiceberg", "trino"], default="mixed",
                    help="scale: who wrote the fleet's tables (see scenarios/scale.py)")
    args = ap.parse_args(argv)

    out = Path(args.out).resolve()
    _clean(out)
    now_ms = int((args.now if args.now is not None else time.time()) * 1000)
    t0 = time.monotonic()
    if args.scenario == "delta":
        from .delta import build_delta

        tables = build_delta(out, now_ms, fleet=args.delta_fleet)
        doc = {"scenario": "delta", "now_ms": now_ms, "tables": tables,
               "generation_seconds": round(time.monotonic() - t0, 2)}
        (out / "expected.json").write_text(json.dumps(doc, indent=1))
        print(f"delta: {len(tables)} tables in {doc['generation_seconds']:.1f}s -> {out}", flush=True)
        return 0
    catalog = open_catalog(out)
    if args.scenario == "seed":
        from .seed import build_seed

        tables = build_seed(catalog, out, now_ms, full=args.full, seed=args.seed)
    else:
        from .scale import build_scale

        tables = build_scale(catalog, out, now_ms, n_tables=args.tables, seed=args.seed, writers=args.writers)
    doc = expected_mod.document(args.scenario, now_ms, args.full, tables)
    if args.scenario == "scale":
        doc["writers"] = args.writers
    doc["generation_seconds"] = round(time.monotonic() - t0, 2)
    tmp = out / "expected.json.tmp"
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=False))
    os.replace(tmp, out / "expected.json")
    files = sum(t["data_files"] for t in doc["tables"].values())
    print(
        f"{args.scenario}{'' if args.scenario != 'scale' else ' (' + args.writers + ')'}: {len(doc['tables'])} tables, {files} data files in "
        f"{doc['generation_seconds']:.1f}s -> {out}",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

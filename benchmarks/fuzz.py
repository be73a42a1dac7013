"""Mutation fuzzer for the readers (CSV, Parquet) and the model-file loader.

Usage: python benchmarks/fuzz.py [--seconds 120] [--seed 0]

Starts from valid inputs (a messy CSV, a Parquet file, a saved model),
mutates bytes (flips, deletions, insertions, truncations, splices) for a
bounded time, and feeds each input to ``nrad.io.read_table``, ``iter_table``
and ``nrad.stream.sample_table`` (plus ``fit_schema``) or
``nrad.model_file.load_model``.  Handled input and
``NradError`` are fine; any other exception is a crash, printed with the
input's hash and kept under ``benchmarks/fuzz-crashes/`` (move them to tests/fuzz_corpus/ once fixed:
the suite replays that folder).
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np
import pandas as pd

from nrad.errors import NradError
from nrad.io import iter_table, read_table
from nrad.model_file import load_model, save_model
from nrad.preprocess import fit_schema
from nrad.stream import sample_table
from nrad.table import fit_table


def seeds(folder: Path) -> dict[str, bytes]:
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=40).round(3), "b": rng.choice(["x", "y", "n/a"], 40),
                       "c": pd.date_range("2024-01-01", periods=40, freq="h").astype(str)})  # fmt: skip
    df.to_csv(folder / "s.csv", index=False)
    df.to_parquet(folder / "s.parquet")
    save_model(fit_table(df, max_epochs=1), folder / "s.nrad")
    return {s: (folder / f"s.{s}").read_bytes() for s in ("csv", "parquet", "nrad")}


def mutate(data: bytes, rng: np.random.Generator, pool: list[bytes]) -> bytes:
    buf = bytearray(data)
    for _ in range(int(rng.integers(1, 8))):
        op = rng.integers(0, 5)
        pos = int(rng.integers(0, max(len(buf), 1)))
        if op == 0 and buf:
            buf[pos % len(buf)] = int(rng.integers(0, 256))
        elif op == 1 and buf:
            del buf[pos : pos + int(rng.integers(1, 16))]
        elif op == 2:
            buf[pos:pos] = bytes(rng.integers(0, 256, int(rng.integers(1, 16)), dtype=np.uint8))
        elif op == 3:
            buf = buf[:pos]
        else:
            other = pool[int(rng.integers(0, len(pool)))]
            start = int(rng.integers(0, max(len(other), 1)))
            buf[pos:pos] = other[start : start + int(rng.integers(1, 64))]
    return bytes(buf)


def target(kind: str, path: Path) -> None:
    if kind == "nrad":
        load_model(path)
    else:
        fit_schema(read_table(path))
        for batch in iter_table(path, 7):  # the streaming reader of nrad score / nrad fit
            fit_schema(batch)
        fit_schema(sample_table(path, 3, seed=0, batch_rows=7).frame)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    crashes_dir = Path(__file__).with_name("fuzz-crashes")
    tried = {"csv": 0, "parquet": 0, "nrad": 0}
    crashes = 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        base = seeds(folder)
        pool = list(base.values())
        deadline = time.monotonic() + args.seconds
        while time.monotonic() < deadline:
            kind = ("csv", "parquet", "nrad")[int(rng.integers(0, 3))]
            data = mutate(base[kind], rng, pool)
            path = folder / f"input.{kind}"
            path.write_bytes(data)
            tried[kind] += 1
            try:
                target(kind, path)
            except NradError:
                pass
            except Exception:  # noqa: BLE001 - anything else is a finding
                crashes += 1
                digest = hashlib.sha1(data).hexdigest()[:12]
                crashes_dir.mkdir(exist_ok=True)
                (crashes_dir / f"{digest}.{kind}").write_bytes(data)
                print(f"CRASH {kind} {digest}: {traceback.format_exc().splitlines()[-1]}", flush=True)
    total = sum(tried.values())
    print(f"inputs tried: {total} ({', '.join(f'{k} {v}' for k, v in tried.items())}); crashes: {crashes}")


if __name__ == "__main__":
    main()

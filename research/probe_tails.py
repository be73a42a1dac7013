"""Which tail calibration gives flags with power and a held false discovery rate?

Step 1 (``--dump DIR``) fits the table model on clean and planted tables,
both ways (``detect``: in sample; ``fit``: on a clean twin), and saves what
every channel's calibration was fitted on (the row scores, the robust
distances, the cells' residuals and values) and the scored rows' statistics
of the same channels, with the truth.

Step 2 (``--evaluate DIR``) re-calibrates those statistics offline under
each variant (how the tails are fitted: the shape's maximum likelihood or
its average, the share left out in sample, the scale a cell's residual is
read on) and prints, per variant, the share of clean tables with any flag
and the recall / FDP on planted tables at q = 0.1, without refitting.

Usage::

    python research/probe_tails.py --dump /tmp/tails --seeds 0-2
    python research/probe_tails.py --evaluate /tmp/tails
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))


def record_fit(frame: pd.DataFrame, seed: int) -> tuple[Any, dict[str, Any]]:
    """Fit the table model on ``frame``, recording what its cells' tails were fitted on (the
    training rows' values spread over their lattice cells)."""
    import nrad.table as table_module

    seen: dict[str, Any] = {"cells": []}
    cells_fit = table_module.NumericCellTests.fit

    def cells_spy(residuals: Any, values: Any, *args: Any, **kwargs: Any) -> Any:
        seen["cells"].append((np.asarray(residuals), np.asarray(values)))
        return cells_fit(residuals, values, *args, **kwargs)

    table_module.NumericCellTests.fit = cells_spy
    try:
        model = table_module.fit_table(frame, random_state=seed)
    finally:
        table_module.NumericCellTests.fit = cells_fit
    return model, seen


def statistics(model: Any, frame: pd.DataFrame, in_sample: bool) -> dict[str, np.ndarray]:
    """What the scored rows' p-values are computed from, channel by channel."""
    from nrad.cells import category_p_values

    prep = model.prepare(frame)
    folds = model.training_folds(len(frame)) if in_sample else None
    scores, z, _ = model.score_prepared(prep, folds)
    tested = model.tested_codes()
    cats = category_p_values(model.categories, prep.codes, prep.own_codes if in_sample else None)[:, tested]
    return {
        "score": scores,
        "distance": model.distance_statistic(z, folds),
        "residuals": model.cell_residuals(prep, folds),
        "values": model.cell_values(prep),
        "categories": cats,
    }


def dump(folder: Path, seeds: list[int]) -> None:
    import torch
    from fdr import NULLS, shift_table

    from nrad.synthetic import FAMILIES

    torch.set_num_threads(1)
    folder.mkdir(parents=True, exist_ok=True)
    jobs = [("clean", g, s) for g in NULLS for s in seeds]
    kinds = ("impossible_age", "huge_amount", "huge_quantity", "age_balance")
    planted = {"issue-kinds": lambda n, k, random_state: FAMILIES["transactions"](n, k, random_state=random_state, kinds=kinds),
               **{f: FAMILIES[f] for f in ("transactions", "sensors", "patients", "properties", "shipments",
                                           "lab_panel", "meters")}}  # fmt: skip
    jobs += [("planted", g, s) for g in planted for s in seeds]
    jobs += [("power", f"shift-{m}-0.02", s) for m in (4, 8) for s in seeds]
    for kind, generator, seed in jobs:
        for mode in ("detect", "fit"):
            path = folder / f"{kind}__{generator}__{mode}__{seed}.npz"
            if path.exists():
                continue
            if kind == "clean":
                data, truth = NULLS[generator](3000, 10_000 + seed), np.zeros(3000, dtype=bool)
                clean = NULLS[generator](3000, 20_000 + seed)
            elif kind == "power":
                magnitude = float(generator.split("-")[1])
                data, truth = shift_table(3000, 50_000 + seed, magnitude, 0.02)
                clean = shift_table(3000, 60_000 + seed, magnitude, 0.0)[0]
            else:
                table = planted[generator](3000, 20, random_state=1000 + seed)
                data, truth = table.frame, table.labels.astype(bool)
                clean = planted[generator](3000, 0, random_state=2000 + seed).frame
            in_sample = mode == "detect"
            model, seen = record_fit(data if in_sample else clean, seed)
            stats = statistics(model, data, in_sample)
            n_row = 1 + int(model.distance_tail is not None)
            numeric = model.cell_tests is not None
            # The row channels are calibrated on the training rows' own (out-of-fold) statistics.
            own = stats if in_sample else statistics(model, clean, True)
            calib = {"cal_score": own["score"]}
            if numeric:
                calib["cal_distance"] = own["distance"]
                calib["cal_residuals"], calib["cal_values"] = seen["cells"][0]
            np.savez_compressed(path, truth=truth, n_row=n_row, **calib, **stats)
            print(path.name, flush=True)


# -- step 2 ------------------------------------------------------------------------------------


def evaluate(folder: Path, variants: list[str]) -> None:
    from nrad.calibration import combine
    from nrad.evidence import bonferroni_weights
    from nrad.flags import benjamini_hochberg

    rows = []
    for path in sorted(folder.glob("*.npz")):
        kind, generator, mode, seed = path.stem.split("__")
        data = dict(np.load(path))
        for variant in variants:
            p = channel_p_values(data, mode == "detect", variant)
            n_num = data["residuals"].shape[1] if "cal_residuals" in data else 0
            weights = bonferroni_weights(int(data["n_row"]), n_num, data["categories"].shape[1])
            with np.errstate(divide="ignore"):
                combined, which = combine(np.log(p), weights)
            flags = benjamini_hochberg(combined, 0.1)
            truth = data["truth"].astype(bool)
            n_row = int(data["n_row"])
            channel = np.where(which == 0, "row", np.where(which < n_row, "distance",
                               np.where(which < n_row + n_num, "cell", "category")))  # fmt: skip
            false_by = {f"false_{c}": int((flags & ~truth & (channel == c)).sum())
                        for c in ("row", "distance", "cell", "category")}  # fmt: skip
            false_by.update({f"found_{c}": int((flags & truth & (channel == c)).sum())
                             for c in ("row", "distance", "cell", "category")})  # fmt: skip
            rows.append({"variant": variant, "kind": kind, "generator": generator, "mode": mode,
                         "seed": seed, "flagged": int(flags.sum()), "found": int((flags & truth).sum()),
                         "planted": int(truth.sum()), "false": int((flags & ~truth).sum()), **false_by})  # fmt: skip
    frame = pd.DataFrame(rows)
    frame["recall"] = frame["found"] / frame["planted"].clip(lower=1)
    frame["fdp"] = frame["false"] / frame["flagged"].clip(lower=1)
    frame["any"] = frame["flagged"] > 0
    pd.set_option("display.width", 220)
    clean = frame[frame["kind"] == "clean"]
    print("clean: share of tables with any flag (q = 0.1)")
    print(clean.pivot_table(index=["generator"], columns=["variant", "mode"], values="any", aggfunc="mean").round(2).to_string())
    print(clean.groupby(["variant", "mode"])["any"].agg(["mean", "size"]).round(3).to_string())
    by = [c for c in frame.columns if c.startswith(("false_", "found_"))]
    print("false flags by the channel that decided them (sum over runs)")
    print(frame.groupby(["kind", "variant", "mode"])[by].sum().to_string())
    rest = frame[frame["kind"] != "clean"]
    print("\nplanted: recall / mean FDP / max FDP (q = 0.1)")
    summary = rest.groupby(["generator", "variant", "mode"]).agg(recall=("recall", "mean"), fdp=("fdp", "mean"),
                                                               max_fdp=("fdp", "max"))  # fmt: skip
    print(summary.round(3).unstack(["variant", "mode"]).to_string())
    print(rest.groupby(["variant", "mode"]).agg(recall=("recall", "mean"), fdp=("fdp", "mean"),
                                               max_fdp=("fdp", "max")).round(3).to_string())  # fmt: skip


def judge_light(
    calib: np.ndarray, knots: np.ndarray, at_least: np.ndarray, k: int, trimmed: int, max_shape: float
) -> Any:
    """The tail that judges who is an outlier, fitted as ``TailModel._fit_below`` does but with
    shape 0 unless a likelihood-ratio test finds a heavier one (``prefer_light``)."""
    import nrad.calibration as cal

    n = calib.size
    if trimmed:
        k = int(min(trimmed + max(round(cal.TAIL_SHARE * (n - trimmed)), min(cal.MIN_TAIL, n - trimmed - 1)), n - 1))
    threshold = float(calib[n - k - 1])
    top = n - trimmed
    cut = float(calib[top] - threshold) if trimmed else None
    fitted = cal.shape_posterior(calib[n - k : top] - threshold, cut, max_shape=max_shape, prefer_light=True)
    if fitted is None:
        return None
    tail = cal.TailModel(knots, at_least, n, threshold, k, *fitted, n_trimmed=trimmed)
    lift = tail._lift(calib, calib[n - k : top])
    return cal.TailModel(knots, at_least, n, threshold, k, *fitted, n_trimmed=trimmed, lift=lift)


def fit_tail(
    scores: np.ndarray,
    trim: tuple[float, float] | None,
    max_shape: float,
    average: bool,
    steps: int,
    level: float,
    light: bool = False,
) -> Any:
    """:meth:`nrad.calibration.TailModel.fit` with its choices open: ``average`` (the shapes averaged
    for the final fit, or the most likely one), ``steps`` (rounds of putting left-out scores back
    that are no outliers at ``level``; 0: the trimmed share stays out)."""
    import nrad.calibration as cal

    calib = np.sort(np.asarray(scores, dtype=np.float64))
    calib = calib[np.isfinite(calib)]
    n = calib.size
    knots, at_least = cal._knots(calib)
    k = int(min(max(round(cal.TAIL_SHARE * n), min(cal.MIN_TAIL, n - 1)), cal.MAX_TAIL))
    none = cal.TailModel(knots, at_least, n, np.inf, 0, np.zeros(0), np.zeros(0), np.zeros(0))
    if n < cal.MIN_CALIBRATION or k < 1:
        return none
    trimmed = 0 if trim is None else cal._trimmed(calib, k, trim, max_shape)
    for _ in range(steps if trimmed else 0):
        if light:
            tail = judge_light(calib, knots, at_least, k, trimmed, max_shape)
        else:
            tail = cal.TailModel._fit_below(calib, knots, at_least, k, trimmed, max_shape, average=False)
        if tail is None:
            break
        outliers = int(np.sum(tail.p_values(calib[n - trimmed :]) * n <= level))
        if outliers >= trimmed:
            break
        trimmed = outliers
    tail = cal.TailModel._fit_below(calib, knots, at_least, k, trimmed, max_shape, average=average)
    return none if tail is None else tail


def channel_p_values(data: dict[str, np.ndarray], in_sample: bool, variant: str) -> np.ndarray:
    """(n, channels) p-values of the scored rows under a calibration ``variant``.

    A variant is ``key=value`` options joined by ``,``: ``avg`` (1: the shapes averaged; ``ravg``,
    ``cavg``: for the row channels or the cells only), ``steps`` (rounds of putting back left-out
    scores that are no outliers at ``level``), ``score``, ``distance``, ``cells`` (in-sample
    trims, least share), ``scale`` (``surprise`` or ``abs``: the scale a cell's residual is read
    on), ``row_max``, ``cell_max`` (largest shapes), ``light`` (1: who is an outlier is judged with shape 0
    unless a likelihood-ratio test finds a heavier one; ``rlight``, ``clight``: rows or cells only).  The shipped calibration is
    ``avg=1,steps=5``.
    """
    from nrad.cells import _surprise

    opts = dict(part.split("=") for part in variant.split(",") if part)
    score_trim = float(opts.get("score", 0.02))
    distance_trim = float(opts.get("distance", 0.0))
    cell_trim = float(opts.get("cells", 0.01))
    row_max, cell_max = float(opts.get("row_max", 0.25)), float(opts.get("cell_max", 0.5))
    scale = opts.get("scale", "surprise")
    residual_stat = _surprise if scale == "surprise" else (lambda t: t)
    row_avg = opts.get("ravg", opts.get("avg", "0")) == "1"
    cell_avg = opts.get("cavg", opts.get("avg", "0")) == "1"
    steps, level = int(opts.get("steps", 0)), float(opts.get("level", 0.1))
    light_rows, light_cells = (opts.get(key, opts.get("light", "0")) == "1" for key in ("rlight", "clight"))

    def fit(scores: np.ndarray, trim: float | None, max_shape: float, gap: float = 0.0, cell: bool = False) -> Any:
        t = None if not in_sample or trim is None else (trim, max(trim, gap))
        return fit_tail(scores, t, max_shape, cell_avg if cell else row_avg, steps, level,
                        light_cells if cell else light_rows)  # fmt: skip

    out = [fit(data["cal_score"], score_trim, row_max).p_values(data["score"])[:, None]]
    if "cal_distance" in data:
        out.append(fit(data["cal_distance"], distance_trim, 0.5, gap=0.25).p_values(data["distance"])[:, None])
        p = np.full(data["residuals"].shape, np.nan)
        for j in range(p.shape[1]):
            sides = []
            for cal_col, test_col, stat in ((data["cal_residuals"][:, j], data["residuals"][:, j], residual_stat),
                                            (data["cal_values"][:, j], data["values"][:, j], np.asarray)):  # fmt: skip
                seen = cal_col[np.isfinite(cal_col)]
                ok = np.isfinite(test_col)
                side = np.full(len(test_col), np.nan)
                if len(seen) < 100:
                    upper = fit_tail(stat(seen), None, cell_max, False, 0, level)
                    lower = fit_tail(stat(-seen), None, cell_max, False, 0, level)
                    upper, lower = (type(t)(t.knots, t.at_least, t.n, np.inf, 0, *(np.zeros(0),) * 3) for t in (upper, lower))
                else:
                    upper = fit(stat(seen), cell_trim, cell_max, cell=True)
                    lower = fit(stat(-seen), cell_trim, cell_max, cell=True)
                side[ok] = np.minimum(2 * np.minimum(upper.p_values(stat(test_col[ok])), lower.p_values(stat(-test_col[ok]))), 1)
                sides.append(side)
            p[:, j] = np.minimum(2 * np.fmin(sides[0], sides[1]), 1)
            p[np.isnan(sides[0]) | np.isnan(sides[1]), j] = np.nan
        out.append(p)
    out.append(data["categories"])
    return np.hstack(out)


def main() -> None:
    from nrad.bench.runner import parse_seeds

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dump", type=Path)
    parser.add_argument("--seeds", default="0-2")
    parser.add_argument("--evaluate", type=Path)
    parser.add_argument("--variants", default="avg=0;avg=1;steps=5;avg=1,steps=5")
    args = parser.parse_args()
    if args.dump:
        dump(args.dump, parse_seeds(args.seeds))
    if args.evaluate:
        evaluate(args.evaluate, args.variants.split(";"))


if __name__ == "__main__":
    main()

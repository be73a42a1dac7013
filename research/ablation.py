"""Write research/results/ABLATION.md from the committed CSVs (accuracy study).

Sources:
- ``results/runs.csv`` (``nrad bench``): NRDE with its defaults, the vanilla
  flow (same flow, no IMA penalty, no split) and the k-NN baseline;
- ``research/results/probe_scores.csv`` (``research/probe_scores.py``): for each
  (dataset, setting), one NRDE fit scored by several pure-density
  estimators sharing that flow;
- ``research/results/probe_smoothing.csv`` (``research/probe_smoothing.py``): NRDE
  fitted with several training-noise levels, and the level chosen by
  held-out likelihood (a second table);
- ``research/results/probe_params.csv`` (``research/probe_params.py``): smaller
  flows, and the size chosen by held-out likelihood (a third table);
- ``research/results/probe_mixture.csv`` (``research/probe_mixture.py``): NRDE with
  a factorized Gaussian-mixture base density (a fourth table);
- ``research/results/probe_patience.csv`` (``research/probe_patience.py``): NRDE and
  the vanilla flow with ``patience_steps=500`` (a fifth table);
- ``research/results/probe_ensemble.csv`` (``research/probe_ensemble.py``): NRDE
  fits that differ only in their seed, averaged (a sixth table);
- ``research/results/probe_penalty.csv`` (``research/probe_params.py`` with
  ``--variants "default;penalty_weight=0.2;penalty_weight=5.0"``): the IMA
  penalty's weight, and the weight chosen by held-out likelihood (a seventh
  table);
- ``research/results/probe_split.csv`` (``research/probe_split.py``): split rules
  rescoring one penalized fit, and the default rule on an unpenalized fit
  (an eighth table, with how often each rule split off any source);
- ``research/results/probe_schedule.csv`` (``research/probe_params.py`` with
  ``--variants "penalty_warmup=1000;size=scaled"``, then ``"penalty_columns=32"``
  in all five settings): a warm-up of the IMA penalty, the penalty exact on more
  columns, and a flow size scaled by the table's shape (a ninth table).

Per setting: mean AUROC and average rank over the datasets every variant
finished (seed 0; rank 1 = best AUROC, ties averaged).  Under each table,
each variant put in NRDE's place among all the methods of runs.csv: the
rank and place it would have had, and on how many datasets it beat or
trailed NRDE's default.

    python research/ablation.py --out research/results/ABLATION.md
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pandas as pd

from nrad.bench.summary import markdown_table

VARIANTS = {
    "nrde": "NRDE default: flow pure density, noise-floor split (runs.csv)",
    "vanilla-flow": "same flow, no IMA penalty, no split (runs.csv)",
    "knn": "PyOD k-NN baseline in x (runs.csv)",
    "probe:flow": "NRDE default refitted by the probe (checks that the probe matches runs.csv)",
    "probe:knn_x": "mean distance to 5 nearest training rows, standardized x",
    "probe:knn_s": "the same in the flow's sources s (whitened)",
    "probe:knn_u": "sources scaled by their mean column norm ||J_g e_i|| (x-like units)",
    "probe:knn_uw": "knn_u with Wiener weights 1 - floor^2/||J_g e_i||^2, floor = weakest source",
    "probe:knn_uw_flat": "knn_uw, weights only when >= 2 sources lie within 2x of the floor",
    "probe:knn_sw_flat": (
        "sources times sqrt(1 - floor^2/||J_g e_i||^2) (flat floor only): the pure-source estimate"
    ),
    "probe:flow_w_flat": (
        "soft split inside the flow density: sum_i w_i s_i^2 / 2 - log|det|, w_i = knn_uw_flat's weights"
    ),
    "probe:flow_w_floor": (
        "the same, floor^2 = mean ||J_g e_i||^2 of the flat group (>= 2 within 2x of the weakest)"
    ),
}


SMOOTHING = {
    "nrde": "NRDE default (runs.csv; train_noise 0.05)",
    "knn": "PyOD k-NN baseline in x (runs.csv)",
    "probe:h=0.05": "NRDE refitted by the smoothing probe, train_noise 0.05 (the default)",
    "probe:h=0.15": "train_noise 0.15",
    "probe:h=0.3": "train_noise 0.3",
    "probe:select": (
        "per fit, the train_noise whose flow has the lowest NLL on the clean validation rows "
        "(the default when there are too few of them for early stopping)"
    ),
}


PARAMS = {
    "nrde": "NRDE default (runs.csv; 6 coupling layers, width 64)",
    "knn": "PyOD k-NN baseline in x (runs.csv)",
    "probe:default": "NRDE refitted by the probe (checks that it matches runs.csv)",
    "probe:n_transforms=2": "2 coupling layers",
    "probe:n_transforms=4,hidden_units=32": "4 coupling layers of width 32",
    "probe:select": (
        "per fit, the size whose flow has the lowest NLL on the clean validation rows "
        "(the default when there are too few of them for early stopping)"
    ),
}
PATIENCE = {
    "nrde": "NRDE default (runs.csv; early-stopping patience 10 epochs)",
    "vanilla-flow": "same flow, no IMA penalty, no split (runs.csv; the same)",
    "knn": "PyOD k-NN baseline in x (runs.csv)",
    "probe:nrde-patience-steps-500": "NRDE with patience_steps=500: at least 500 steps of patience",
    "probe:vanilla-flow-patience-steps-500": "the vanilla flow with patience_steps=500",
}
PENALTY = {
    "nrde": "NRDE default (runs.csv; IMA penalty weight 1)",
    "vanilla-flow": "same flow, no IMA penalty, no split (runs.csv)",
    "knn": "PyOD k-NN baseline in x (runs.csv)",
    "probe:default": "NRDE refitted by the probe (checks that it matches runs.csv)",
    "probe:penalty_weight=0.2": "IMA penalty weight 0.2",
    "probe:penalty_weight=5.0": "IMA penalty weight 5",
    "probe:select": (
        "per fit, the weight whose flow has the lowest NLL on the clean validation rows "
        "(the default when there are too few of them for early stopping)"
    ),
}
SPLIT = {
    "nrde": "NRDE default (runs.csv; IMA penalty, noise-floor split)",
    "vanilla-flow": "same flow, no IMA penalty, no split (runs.csv)",
    "knn": "PyOD k-NN baseline in x (runs.csv)",
    "probe:floor": "NRDE refitted by the probe, default noise-floor rule (checks that it matches runs.csv)",
    "probe:all": "the same fit, no split: IMA penalty, flow density",
    "probe:energy90": "pure = the most influential sources holding 90% of the squared column norms",
    "probe:gap": "cut at the largest gap in log influence if >= log 3 (no flatness or count condition)",
    "probe:drop1": "the weakest source is noise",
    "probe:half": "the ceil(d/2) most influential sources are pure",
    "probe:no_penalty": "a fit without the IMA penalty, default noise-floor rule",
}
SCHEDULE = {
    "nrde": "NRDE default (runs.csv; full penalty from the first step; 6 coupling layers, width 64)",
    "vanilla-flow": "same flow, no IMA penalty, no split (runs.csv)",
    "knn": "PyOD k-NN baseline in x (runs.csv)",
    "probe:penalty_warmup=1000": "IMA penalty weight ramped linearly from 0 to 1 over the first 1,000 steps",
    "probe:penalty_columns=32": (
        "the penalty's Jacobian columns exact up to d = 32 (default: 8, column-sampled above)"
    ),
    "probe:size=scaled": (
        "width 2d rounded up to a power of 2, 32-256; 4 coupling layers below 1,000 training rows, "
        "6 up to 10,000, 8 above"
    ),
}
ENSEMBLE = {
    "nrde": "NRDE default (runs.csv; one fit, random_state 0)",
    "knn": "PyOD k-NN baseline in x (runs.csv)",
    "probe:single": "NRDE refitted by the probe, random_state 0 (checks that it matches runs.csv)",
    "probe:mean3": "mean anomaly score of 3 fits, random_state 0-2 (geometric mean of densities); 3x fit",
    "probe:mix3": "mixture of the 3 fits' densities, -log mean_k exp(-score_k); 3x fit",
    "probe:mean5": "mean anomaly score of 5 fits, random_state 0-4; 5x fit",
    "probe:mix5": "mixture of the 5 fits' densities; 5x fit",
}
MIXTURE = {
    "nrde": "NRDE default (runs.csv; standard-normal base)",
    "vanilla-flow": "same flow, no IMA penalty, no split (runs.csv)",
    "knn": "PyOD k-NN baseline in x (runs.csv)",
    "probe:mixture": "each source's base density a learned 1-D mixture of 3 Gaussians",
}


def load(runs: pd.DataFrame, probe: pd.DataFrame, seed: int) -> pd.DataFrame:
    r = runs[(runs.seed == seed) & runs.method.isin(["nrde", "vanilla-flow", "knn"]) & (runs.status == "ok")]
    p = probe[probe.seed == seed].assign(method="probe:" + probe.variant)
    cols = ["dataset", "setting", "method", "auroc"]
    return pd.concat([r[cols], p[cols]], ignore_index=True)


def table(runs: pd.DataFrame, probe: pd.DataFrame, seed: int, variants: dict[str, str]) -> pd.DataFrame:
    """The variants' rows, in the settings the probe covered."""
    df = load(runs, probe, seed)
    probed = df[df.method.str.startswith("probe:")].setting.unique()
    return df[df.method.isin(list(variants)) & df.setting.isin(probed)]


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for setting, part in df.groupby("setting"):
        wide = part.pivot_table(index="dataset", columns="method", values="auroc")
        # Variants a probe ran in fewer settings have no column here; then
        # the datasets every remaining variant finished.
        wide = wide.dropna(axis=1, how="all").dropna()
        ranks = wide.rank(axis=1, ascending=False).mean()
        for method in wide.columns:
            rows.append(dict(setting=setting, method=method, n=len(wide), auroc=wide[method].mean(),
                             rank=ranks[method]))  # fmt: skip
    return pd.DataFrame(rows)


def render(summary: pd.DataFrame, variants: dict[str, str], head: list[str]) -> list[str]:
    settings = sorted(summary.setting.unique())
    rows = []
    for method in variants:
        cells = []
        for s in settings:
            row = summary[(summary.setting == s) & (summary.method == method)]
            cells.append(f"{row.auroc.iloc[0]:.3f} ({row['rank'].iloc[0]:.2f})" if len(row) else "—")
        rows.append([f"`{method}`", *cells])
    lines = [*head, *grid(["variant", *settings], rows)]
    counts = ", ".join(f"{s} {int(summary[summary.setting == s].n.iloc[0])}" for s in settings)
    lines += ["", f"Datasets per setting: {counts}", "", "Variants:", ""]
    lines += [f"- `{m}`: {note}" for m, note in variants.items()]
    return lines


HEAD = [
    "# Ablation (seed 0)", "",
    "Generated by `python research/ablation.py` from results/runs.csv and the",
    "probes' CSVs. Mean AUROC (average rank among the rows of each table, 1 =",
    "best) over the datasets every variant of that table finished.", "",
    "## Pure-density estimators on one NRDE flow (research/results/probe_scores.csv)", "",
]  # fmt: skip


def head(title: str, *text: str) -> list[str]:
    """A table's heading lines: a blank line, ``## title``, then ``text`` as a paragraph."""
    return ["", f"## {title}", "", *text, *([""] if text else [])]


PARAMS_HEAD = head("Flow size (research/results/probe_params.csv)")
MIXTURE_HEAD = head("Mixture base density (research/results/probe_mixture.csv)")
PATIENCE_HEAD = head(
    "Early-stopping patience (research/results/probe_patience.csv)",
    "Patience of at least 500 gradient steps against the default's 10 epochs",
    "(research/notes.md section 10).",
)
PENALTY_HEAD = head("IMA penalty weight (research/results/probe_penalty.csv)")
ENSEMBLE_HEAD = head(
    "Ensembles over seeds (research/results/probe_ensemble.csv)",
    "Fits that differ only in random_state, on the same split; fit and scoring",
    "cost grow with the number of fits (fit seconds are in the CSV).",
)
SPLIT_HEAD = head(
    "Source-split rules (research/results/probe_split.csv)",
    "One penalized fit per (dataset, setting), rescored with each rule (only the",
    "noise set changes); `no_penalty` is a second fit (research/notes.md section 13).",
)
SCHEDULE_HEAD = head(
    "Penalty warm-up, exact penalty, flow size scaled by n and d (research/results/probe_schedule.csv)",
    "Each fitted once, random_state 0, under the protocol (research/notes.md section 15).",
)
SMOOTHING_HEAD = head(
    "Training-noise smoothing (research/results/probe_smoothing.csv)",
    "The flow trained on rows plus N(0, h^2) noise learns the data density smoothed",
    "by a Gaussian kernel of bandwidth h (standardized units).",
)


def grid(columns: list[str], rows: list[list[Any]]) -> list[str]:
    """A markdown table's lines, rendered as RESULTS.md's tables are."""
    return markdown_table(pd.DataFrame(rows, columns=columns)).split("\n")


def split_counts(probe: pd.DataFrame, seed: int) -> list[str]:
    """How often each split rule declared any noise source: datasets with a split, per setting."""
    p = probe[probe.seed == seed]
    fired = (p.n_noise > 0).groupby([p.variant, p.setting]).sum().unstack().astype(int)
    settings = sorted(fired.columns)
    rows = [[f"`{v}`", *(fired.loc[v, s] for s in settings)] for v in fired.index]
    title = "Datasets on which the rule split off at least one source:"
    return ["", title, "", *grid(["rule", *settings], rows)]


def places(runs: pd.DataFrame, probe: pd.DataFrame, seed: int) -> list[str]:
    """Each probe variant put in NRDE's place among all of runs.csv's methods (that seed): its
    average rank and place, a failed run ranking last as in RESULTS.md; and on how many
    datasets it beat or trailed NRDE's default by more than 0.005 AUROC."""
    # The study's 20 methods: `default` (the command line's table model) came later.
    r = runs[(runs.seed == seed) & (runs.method != "default")]
    p = probe[probe.seed == seed]
    settings = sorted(p.setting.unique())
    rows = [["`nrde` (runs.csv)", *(_place(r[r.setting == s], None) for s in settings)]]
    for variant in p.variant.unique():
        cells = [_place(r[r.setting == s], p[(p.setting == s) & (p.variant == variant)]) for s in settings]
        rows.append([f"`{variant}`", *cells])
    return [
        "",
        "Put in NRDE's place among the methods of results/runs.csv (same seed): average rank",
        "(place); datasets on which the variant is above / below NRDE's default by > 0.005 AUROC.",
        "",
        *grid(["variant", *settings], rows),
    ]


def _place(runs: pd.DataFrame, variant: pd.DataFrame | None) -> str:
    """NRDE's ``"rank (place of n)"`` (``variant`` None), or ``variant``'s in its stead with
    its ups and downs against NRDE; "—" where the variant has no rows."""
    wide = runs.pivot_table(index="dataset", columns="method", values="auroc")
    default = wide["nrde"].copy()
    if variant is not None:
        if not len(variant):
            return "—"
        wide["nrde"] = variant.set_index("dataset").auroc.reindex(wide.index)
    ranks = wide.fillna(-1.0).rank(axis=1, ascending=False).mean()
    cell = f"{ranks['nrde']:.2f} ({int((ranks < ranks['nrde']).sum()) + 1} of {len(ranks)})"
    if variant is None:
        return cell
    diff = wide["nrde"] - default
    return f"{cell}; {int((diff > 0.005).sum())} / {int((diff < -0.005).sum())}"


def over_seeds(runs: pd.DataFrame, probe: pd.DataFrame) -> list[str]:
    """Mean AUROC of each variant a probe ran at more than one seed, per seed, next to NRDE's
    default (runs.csv, same seed and datasets): whether a seed-0 difference holds."""
    r = runs[(runs.method == "nrde") & (runs.status == "ok")]
    multi = probe[probe.groupby("variant").seed.transform("nunique") > 1]
    if multi.empty:
        return []
    settings = sorted(multi[multi.seed != multi.seed.min()].setting.unique())
    multi = multi[multi.setting.isin(settings)]
    rows = []
    for (variant, seed), part in multi.groupby(["variant", "seed"]):
        cells = []
        for setting in settings:
            own = part[part.setting == setting].set_index("dataset").auroc
            base = r[(r.setting == setting) & (r.seed == seed)].set_index("dataset").auroc
            both = pd.concat([own, base], axis=1, keys=["own", "base"]).dropna()
            cell = f"{both.own.mean():.3f} / {both.base.mean():.3f} ({len(both)})"
            cells.append(cell if len(both) else "—")
        rows.append([f"`{variant}`", seed, *cells])
    title = "Over seeds: mean AUROC of the variant / of NRDE's default (runs.csv), same datasets"
    return ["", title, "", *grid(["variant", "seed", *settings], rows)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, default=Path("results/runs.csv"))
    parser.add_argument("--probe", type=Path, default=Path("research/results/probe_scores.csv"))
    parser.add_argument("--smoothing", type=Path, default=Path("research/results/probe_smoothing.csv"))
    parser.add_argument("--params", type=Path, default=Path("research/results/probe_params.csv"))
    parser.add_argument("--mixture", type=Path, default=Path("research/results/probe_mixture.csv"))
    parser.add_argument("--patience", type=Path, default=Path("research/results/probe_patience.csv"))
    parser.add_argument("--ensemble", type=Path, default=Path("research/results/probe_ensemble.csv"))
    parser.add_argument("--penalty", type=Path, default=Path("research/results/probe_penalty.csv"))
    parser.add_argument("--split", type=Path, default=Path("research/results/probe_split.csv"))
    parser.add_argument("--schedule", type=Path, default=Path("research/results/probe_schedule.csv"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("research/results/ABLATION.md"))
    args = parser.parse_args()
    from nrad.io import atomic_path

    runs = pd.read_csv(args.runs)
    lines: list[str] = []
    for path, variants, head in (
        (args.probe, VARIANTS, HEAD),
        (args.smoothing, SMOOTHING, SMOOTHING_HEAD),
        (args.params, PARAMS, PARAMS_HEAD),
        (args.mixture, MIXTURE, MIXTURE_HEAD),
        (args.patience, PATIENCE, PATIENCE_HEAD),
        (args.ensemble, ENSEMBLE, ENSEMBLE_HEAD),
        (args.penalty, PENALTY, PENALTY_HEAD),
        (args.split, SPLIT, SPLIT_HEAD),
        (args.schedule, SCHEDULE, SCHEDULE_HEAD),
    ):
        probe = pd.read_csv(path)
        lines += render(summarize(table(runs, probe, args.seed, variants)), variants, head)
        if path == args.split:
            lines += split_counts(probe, args.seed)
        lines += places(runs, probe, args.seed)
        lines += over_seeds(runs, probe)
    text = "\n".join(lines) + "\n"
    with atomic_path(args.out) as tmp:
        tmp.write_text(text)
    print(text)


if __name__ == "__main__":
    main()

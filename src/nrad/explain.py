"""Which columns make a row unusual: the score each column alone would give back if it were typical.

For a row ``x`` with anomaly score ``S(x)`` (nats) and an input column ``j``,
the contribution of ``j`` is

    g_j(x) = S(x) - min_v S(x with column j set to v)   (>= 0),

the minimum over the values ``v`` a normal row could have there: for a
numeric column, its training quantiles read in the row's context (an amount
at the merchant's own usual levels); for a categorical column, each of its
levels; for a missing cell, "present".  In words: *how many nats of
surprise go away if this column alone is repaired*.

Why this and not gradients or Shapley values (measured in docs/method.md,
section "Explanations"): an impossible value is repaired by its own column,
so that column gets a large, positive contribution; a broken relation
between two columns is repaired by either one, so both are named; a level
never seen is repaired by a common one.  A column that is already typical
gives back nothing, so a harmless 3-level column is not named for every
row, and the numbers are nats of the score the user sees (1 nat: e times
less likely), not sensitivities that reach 1e8 far from the data.
Contributions do not add up to the score: two columns that are unusual
together each get the whole of what repairing them gives back.

``top_features`` names the column with the largest contribution first and
the next ones as read with that column repaired (:func:`ranked`).

The cost per explained row is one score per candidate value (16 per numeric
column, one per level), twice (once more with the first column repaired),
so the command line explains the rows a user reads (flagged and top rows)
unless asked for every row.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from nrad.encoding import PRESENT, SPIKE, Prepared, as_pandas
from nrad.evidence import outside_dates, row_p_values
from nrad.preprocess import date_bounds, read_dates
from nrad.rules import rule_reasons
from nrad.words import feature_level
from nrad.words import label as _label
from nrad.words import number as _number
from nrad.words import short as _short

if TYPE_CHECKING:
    from nrad.table import TableModel

#: Columns named in ``top_features``.
TOP_FEATURES = 3

#: A categorical feature with more codes than this is repaired only with its most frequent levels
#: (plus other and missing).
MAX_LEVEL_CANDIDATES = 64
#: Rows repaired at once (each expands to a few hundred candidate rows).
REPAIR_CHUNK = 256
#: Cells of trial rows per flow call: several columns' trials go into one call.  One call per
#: column scored a few hundred rows, and on a 400-column table each call's fixed costs (the
#: folds, the threads) were most of its time.
TRIAL_CELLS = 4_000_000
#: Related pairs are credited, per row, where one of the two is among this many of its numeric
#: features (see _pair_candidates).
PAIR_CANDIDATES = 8
NUMERIC, CATEGORICAL = 1, 2


@dataclass(frozen=True)
class Repair:
    """Per row and kept input column: the score given back, and the repair that gives it."""

    gains: np.ndarray  # (n, n_columns), nats, >= 0
    kind: np.ndarray  # (n, n_columns): NUMERIC, CATEGORICAL, or 0 (nothing to repair)
    feature: np.ndarray  # (n, n_columns): the repaired feature's index
    value: np.ndarray  # (n, n_columns): its repaired z (numeric) or code (categorical)
    #: (n, n_columns) what the best repair this column leads gives back: its own, or a related
    #: pair's in which it has the larger share (see _credit_pairs).
    lead: np.ndarray


def repair(model: TableModel, prep: Prepared, folds: np.ndarray | None = None) -> Repair:
    """Contributions of every kept column for every row of ``prep`` (see the module docstring).

    ``folds``: the rows are the model's training rows, read in-sample
    (leave-one-out category counts, each row's own cross-fitted flow).
    """
    chunks = [np.arange(i, min(i + REPAIR_CHUNK, len(prep.y))) for i in range(0, len(prep.y), REPAIR_CHUNK)]
    parts = [_repair_chunk(model, prep.take(c), None if folds is None else folds[c]) for c in chunks]
    if not parts:
        n_cols = len(model.schema.columns)
        empty = np.zeros((0, n_cols))
        return Repair(empty, empty.astype(int), empty.astype(int), empty, empty)
    return Repair(
        *(
            np.concatenate([getattr(p, f) for p in parts])
            for f in ("gains", "kind", "feature", "value", "lead")
        )  # fmt: skip
    )


def _repair_chunk(model: TableModel, prep: Prepared, folds: np.ndarray | None) -> Repair:
    n, n_cols = len(prep.y), len(model.schema.columns)
    base, z, terms = model.density_prepared(prep, folds)
    flow = model.flow_score(z, folds)
    numeric = flow + terms.sum(axis=1)  # the score's numeric part
    best = np.full((n, n_cols), np.inf)
    kind = np.zeros((n, n_cols), dtype=np.int64)
    feature = np.zeros((n, n_cols), dtype=np.int64)
    value = np.zeros((n, n_cols))

    def offer(column: int, totals: np.ndarray, candidates: np.ndarray, what: int, index: int) -> None:
        pick = np.argmin(totals, axis=1)
        low = totals[np.arange(n), pick]
        better = low < best[:, column]
        best[better, column] = low[better]
        kind[better, column], feature[better, column] = what, index
        value[better, column] = (
            candidates[pick[better]] if candidates.ndim == 1 else candidates[better, pick[better]]
        )

    grid, grid_terms = model.numeric.grid, _grid_terms(model)
    sources = model.schema.numeric_sources
    every_row = np.arange(n)
    singles = [((j,), grid[j][:, None], every_row) for j in range(z.shape[1])]
    for ((j,), _, _), trial_scores in _trial_scores(model, z, folds, singles):
        # The cell's terms go; the repaired value's own tail term comes in (no clip: it is typical).
        totals = (base - flow - terms[:, j])[:, None] + grid_terms[j][None, :] + trial_scores
        offer(sources[j], totals, grid[j], NUMERIC, j)
    leave_out = None if folds is None else prep.own_codes
    category_terms = model.categories.log_terms(prep.codes, leave_out)
    for f, column in enumerate(_categorical_columns(model)):
        candidates = _level_candidates(model, f)
        totals = _categorical_totals(model, prep, category_terms, numeric, f, candidates, folds)
        offer(column, totals, candidates.astype(np.float64), CATEGORICAL, f)
    gains = np.maximum(base[:, None] - best, 0.0)
    gains[~np.isfinite(gains)] = 0.0
    lead = _credit_pairs(model, z, folds, base - flow, terms, gains, kind, feature, value)
    kind[gains <= 0] = 0
    return Repair(gains, kind, feature, value, lead)


def ranked(
    model: TableModel, prep: Prepared, result: Repair, folds: np.ndarray | None, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` columns a row's explanation names, in order, and what each gives back; (n, k) each.

    First the column that leads the repair giving back most (``Repair.lead``:
    its own, or a related pair's in which it has the larger share; listed
    with what that repair gives back).  The next ones are read
    with that column repaired: far from the training rows a flow's density
    is an extrapolation, and with an age of 153 in the row, setting the
    hour of day to another value moved the score by 41 nats, which says
    nothing about the hour.  Once the age is typical, what another column
    gives back is what it adds of its own.  A column related to the first
    (:attr:`nrad.numeric.NumericModel.related`: the two move together in
    training) keeps its own credit, so both columns of a broken relation
    are named: repairing either one alone mends the row.
    """
    n = len(result.gains)
    first = np.argmax(result.lead, axis=1)
    columns, gains = first[:, None], result.lead[np.arange(n), first][:, None]
    if k < 2 or result.gains.shape[1] < 2:
        return columns, gains
    after = repair(model, repaired(model, prep, result, first), folds).gains
    rest = np.where(_related_columns(model)[first], result.gains, after)
    rest[np.arange(n), first] = -np.inf
    order = np.argsort(-rest, axis=1, kind="stable")[:, : k - 1]
    return np.hstack([columns, order]), np.hstack([gains, np.take_along_axis(rest, order, axis=1)])


def repaired(model: TableModel, prep: Prepared, result: Repair, columns: np.ndarray) -> Prepared:
    """``prep`` with column ``columns[i]`` of each row ``i`` set to its repair (kept where there is none)."""
    y, codes = prep.y.copy(), prep.codes.copy()
    for i, column in enumerate(columns):
        f, value = int(result.feature[i, column]), result.value[i, column]
        if result.kind[i, column] == NUMERIC:
            y[i, f] = model.numeric.to_shaped(f, np.array([value]), prep.codes[i])[0]
        elif result.kind[i, column] == CATEGORICAL:
            codes[i, f] = int(value)
    return Prepared(
        y, codes, prep.counts, prep.missing, prep.own_codes, prep.positions, prep.far_dates, prep.apart_dates
    )


def _related_columns(model: TableModel) -> np.ndarray:
    """(columns, columns) booleans: input columns holding a related numeric pair (and each column itself)."""
    n_cols = len(model.schema.columns)
    related = np.eye(n_cols, dtype=bool)
    sources = model.schema.numeric_sources
    for j, k in model.numeric.related:
        related[sources[j], sources[k]] = related[sources[k], sources[j]] = True
    return related


def _grid_terms(model: TableModel) -> np.ndarray:
    """(p, GRID) tail terms of each feature's typical values (the candidates a repair offers)."""
    return model.numeric.tail_terms(model.numeric.grid.T).T


def _credit_pairs(
    model: TableModel,
    z: np.ndarray,
    folds: np.ndarray | None,
    rest: np.ndarray,
    terms: np.ndarray,
    gains: np.ndarray,
    kind: np.ndarray,
    feature: np.ndarray,
    value: np.ndarray,
) -> np.ndarray:
    """Related numeric pairs repaired together, credited by the two-player Shapley value.

    Repairing one of two columns that moved together (a temperature and the
    pressure that follows it) breaks their relation and gives back little;
    repairing both gives back a lot.  With single gains ``g_j, g_k`` and pair
    gain ``G``, column ``j`` gets ``(g_j + G - g_k) / 2`` when that is more:
    both get about ``G / 2`` when only the pair repairs the row, a broken
    relation (either repair suffices) about ``G / 2`` each, and a column
    that is wrong alone keeps its own gain while its partner gets about 0.
    ``rest``: each row's score without the flow part (categorical terms and
    the soft-clip and tail terms ``terms`` of the unrepaired values).

    Returns what the best repair each column leads gives back (``Repair.lead``): a pair's whole
    gain goes to the member with the larger share.  An amount and its copy in another currency,
    both 40 times too large, each give back nothing alone and half of the pair's 139 nats by
    Shapley; the unit price that, repaired alone, agrees with them gives back 76: the pair is
    the better repair, and the amount leads it.
    """
    grid = model.numeric.grid
    g = grid.shape[1]
    sources = model.schema.numeric_sources
    lead = gains.copy()
    if len(model.numeric.related) == 0:
        return lead
    single = gains.copy()  # each pair's Shapley values from the single gains, not from other pairs
    base = rest + model.flow_score(z, folds)
    grid_terms = _grid_terms(model)
    candidates = _pair_candidates(z, gains[:, sources])
    pairs = [
        ((j, k), np.column_stack([np.repeat(grid[j], g), np.tile(grid[k], g)]), rows)
        for j, k in model.numeric.related
        if sources[j] != sources[k] and (rows := np.flatnonzero(candidates[:, j] | candidates[:, k])).size
    ]
    for ((j, k), _, rows), trial_scores in _trial_scores(model, z, folds, pairs):
        cj, ck = sources[j], sources[k]
        # The repaired values lie inside the soft clip: their clip terms go, their tail terms come in.
        pair_terms = np.repeat(grid_terms[j], g) + np.tile(grid_terms[k], g)
        totals = (rest[rows] - terms[rows, j] - terms[rows, k])[:, None] + pair_terms[None, :] + trial_scores
        pick = np.argmin(totals, axis=1)
        pair = np.maximum(base[rows] - totals[np.arange(len(rows)), pick], 0.0)
        for c, other, mine in ((cj, ck, j), (ck, cj, k)):
            # Equal shares (the two repaired only together) lead with the first column.
            mine_single, theirs = single[rows, c], single[rows, other]
            larger = mine_single > theirs if c > other else mine_single >= theirs
            lead[rows, c] = np.where(larger, np.maximum(lead[rows, c], pair), lead[rows, c])
            shapley = (single[rows, c] + pair - single[rows, other]) / 2.0
            better = shapley > gains[rows, c]
            at = rows[better]
            gains[at, c] = shapley[better]
            kind[at, c], feature[at, c] = NUMERIC, mine
            value[at, c] = grid[mine][pick[better] // g if mine == j else pick[better] % g]
    return lead


def _pair_candidates(z: np.ndarray, single: np.ndarray) -> np.ndarray:
    """(n, p) booleans: the numeric features a row's pairs are credited for (one of the two must be).

    A row's ``PAIR_CANDIDATES`` features with the largest single gains (the
    columns it may name) and with the largest ``|z|`` (two columns shifted
    together along their relation: either one repaired alone breaks it, so
    both single gains are small, but each is far out); every feature when
    there are no more.  A wide table's row has thousands of related pairs,
    each ``GRID ** 2`` scores; a pair of two columns that give back little
    alone and lie near their usual values is left out.
    """
    n, p = z.shape
    if p <= PAIR_CANDIDATES:
        return np.ones((n, p), dtype=bool)
    out = np.zeros((n, p), dtype=bool)
    for score in (single, np.abs(z)):
        score = np.nan_to_num(score, nan=-np.inf)
        top = np.argpartition(-score, PAIR_CANDIDATES - 1, axis=1)[:, :PAIR_CANDIDATES]
        out[np.arange(n)[:, None], top] = True
    return out


#: What a trial repairs: features, the values they are set to (one row per trial), the rows.
_Setting = tuple[tuple[int, ...], np.ndarray, np.ndarray]


def _trial_scores(
    model: TableModel, z: np.ndarray, folds: np.ndarray | None, settings: Sequence[_Setting]
) -> Iterator[tuple[_Setting, np.ndarray]]:
    """Each setting ``(features, values, rows)`` with the flow scores, shape ``(len(rows), m)``, of
    the rows ``rows`` of ``z`` with those features set to each of the ``m`` rows of ``values``.

    As many settings per flow call as fit in ``TRIAL_CELLS`` (a row's score
    does not depend on the rows beside it).
    """
    for batch in _batches(settings, z.shape[1]):
        trials, trial_folds = [], []
        for features, values, rows in batch:
            trial = np.repeat(z[rows], len(values), axis=0)
            trial[:, list(features)] = np.tile(values, (len(rows), 1))
            trials.append(trial)
            if folds is not None:
                trial_folds.append(np.repeat(folds[rows], len(values)))
        trial_fold = None if folds is None else np.concatenate(trial_folds)
        scores = model.flow_score(np.concatenate(trials), trial_fold)
        ends = np.cumsum([len(rows) * len(values) for _, values, rows in batch])[:-1]
        for (features, values, rows), part in zip(batch, np.split(scores, ends), strict=True):
            yield (features, values, rows), part.reshape(len(rows), len(values))


def _batches(settings: Sequence[_Setting], width: int) -> Iterator[list[_Setting]]:
    """``settings`` in runs whose trial rows hold about ``TRIAL_CELLS`` cells (``width`` per row)."""
    batch: list[_Setting] = []
    cells = 0
    for setting in settings:
        batch.append(setting)
        cells += len(setting[2]) * len(setting[1]) * width
        if cells >= TRIAL_CELLS:
            yield batch
            batch, cells = [], 0
    if batch:
        yield batch


def _categorical_columns(model: TableModel) -> list[int]:
    """Input column (index into the schema's columns) of each code feature, indicators included."""
    numeric = model.schema.numeric_sources
    return model.schema.categorical_sources + [numeric[j] for j in model.indicator_features]


def _level_candidates(model: TableModel, f: int) -> np.ndarray:
    n_cat = len(model.schema.categorical_names)
    if f >= n_cat:  # a number's indicator: present, or at its column's spike if it has one
        return np.array([PRESENT, SPIKE]) if model.categories.n_codes[f] == 4 else np.array([PRESENT])
    k = model.categories.n_codes[f]
    if k <= MAX_LEVEL_CANDIDATES:
        return np.arange(k)
    # Levels are stored most frequent first; other and missing are the last two codes.
    return np.r_[np.arange(MAX_LEVEL_CANDIDATES - 2), k - 2, k - 1]


def _categorical_totals(
    model: TableModel,
    prep: Prepared,
    terms: np.ndarray,
    numeric: np.ndarray,
    f: int,
    candidates: np.ndarray,
    folds: np.ndarray | None,
) -> np.ndarray:
    """Scores of each row with code feature ``f`` set to each candidate; shape (n, len(candidates)).
    ``terms``: the category model's log terms of the rows as they are (n, q).

    The numbers keep their score: when ``f`` is the context a number is read
    against (a person's sex for their weight), reading the number against
    another level would credit the category with what the number itself is
    doing wrong (a weight of 166 kg beside a height of 57 cm is odd for
    either sex, less so for one of them).  The category is repaired for what
    it costs itself, given its parent and children among the categories: only
    those terms change (a wide table has thousands of indicator features, and
    recomputing them all for each made its explanations take minutes).
    """
    n, c = len(prep.y), len(candidates)
    changed = [f, *model.categories.children(f)]
    kept = terms.sum(axis=1) - terms[:, changed].sum(axis=1)
    codes = np.repeat(prep.codes, c, axis=0)
    own = np.repeat(prep.own_codes, c, axis=0)
    codes[:, f] = np.tile(candidates, n)
    new = model.categories.log_terms(codes, None if folds is None else own, changed).sum(axis=1)
    totals = -(np.repeat(kept, c) + new) + np.repeat(numeric, c)
    return totals.reshape(n, c)


# -- words ---------------------------------------------------------------------------


def reasons(
    model: TableModel,
    df: pd.DataFrame,
    prep: Prepared,
    result: Repair,
    columns: np.ndarray,
    rules: tuple[list[str | None], list[str | None]],
    in_sample: bool = False,
) -> list[str]:
    """One sentence per row about its first-named column: its value, and what is typical.

    ``rules``: :func:`nrad.rules.rule_reasons` of the rows and columns.  A cell flagged for a rule
    the density does not know (a wall, an identity, a dependency) is explained by the rule: its
    repair gives back little or nothing.  ``in_sample``: the rows are the table the model was
    fitted on (its dates read against their own support: ``far_dates``)."""
    out = []
    outside = outside_dates(model, prep.codes, prep.far_dates if in_sample else prep.apart_dates)
    broken, elsewhere = rules
    for i, col in enumerate(columns):
        plan = model.schema.columns[col]
        name = plan.name
        raw = df[name].iloc[i]
        if plan.kind == "datetime" and outside[i, model.schema.categorical_sources.index(col)]:
            out.append(_date_reason(plan, raw, in_sample))
            continue
        rule = broken[i]
        if rule is not None:
            out.append(rule)
            continue
        if result.gains[i, col] <= 0.005:
            text = ""
        elif result.kind[i, col] == NUMERIC:
            text = _numeric_reason(
                model, prep, i, int(result.feature[i, col]), raw, float(result.value[i, col])
            )
        else:
            feature, best = int(result.feature[i, col]), int(result.value[i, col])
            text = _categorical_reason(model, prep, i, feature, best, raw)
        out.append("; ".join(part for part in (text, elsewhere[i]) if part))
    return out


def _date_reason(plan: Any, raw: Any, in_sample: bool = False) -> str:
    """``"arrival 2204-05-07 (outside the dates this column holds: 2024-01-03 to 2024-12-28; none
    before 2014-01-03 or after 2034-12-28)"``; for new rows within those bounds, outside by the
    dates of the table scored as well (:data:`nrad.preprocess.DATE_BATCH_MIN_ROWS`): ``"date
    2031-09-11 (far from the dates this column holds, 2023-01-10 to 2024-12-24, and from those of
    the other rows scored)"``."""
    lo, hi = (str(pd.Timestamp(v).date()) for v in plan.date_range)
    low, high = date_bounds(plan, in_sample)
    when = read_dates(plan, pd.Series([raw])).iloc[0]
    if not in_sample and pd.notna(when) and low <= when <= high:
        return (f"{plan.name} {raw} (far from the dates this column holds, {lo} to {hi}, and from those "
                f"of the other rows scored)")  # fmt: skip
    return (f"{plan.name} {raw} (outside the dates this column holds: {lo} to {hi}; none before "
            f"{low.date()} or after {high.date()})")  # fmt: skip


def _numeric_reason(model: TableModel, prep: Prepared, i: int, j: int, raw: Any, repaired_z: float) -> str:
    """``"amount 4512 (typical for merchant 'M07': 31 to 58; 45 would fit the rest of this row)"``.

    The typical range is the middle half of the feature's training values in
    the row's context; what "would fit" is the repair: the value that, the
    other columns as they are, takes most off the score.  When a relation is
    broken (an age that does not go with the balance) the two differ.
    """
    numeric, schema = model.numeric, model.schema
    name = schema.numeric_names[j]
    quart = np.interp(
        [0.25, 0.75], (np.arange(numeric.grid.shape[1]) + 0.5) / numeric.grid.shape[1], numeric.grid[j]
    )
    lo, hi = numeric.to_original(j, quart, prep.codes[i])
    fit = float(numeric.to_original(j, np.array([repaired_z]), prep.codes[i])[0])
    feature, code = numeric.context(j, prep.codes[i])
    context = (
        f" for {schema.categorical_names[feature]} {_label(model, feature, code)}" if feature >= 0 else ""
    )
    if np.isnan(prep.y[i, j]):
        spike = schema.columns[schema.numeric_sources[j]].spike
        # A spike's cells (a 0 that most rows hold) are read by its indicator, not as a number.
        if spike is not None and not pd.isna(raw):
            return f"{name} {_number(raw)} (the column's most common value)"
        return f"{name} missing"
    step = float(numeric.discrete[j])
    if step > 0:  # a count or price: typical values on its lattice ("1", not "0.7782 to 1.436")
        lo, hi, fit = (float(np.round(v / step) * step) for v in (lo, hi, fit))
    lo, hi, fit = _zero_below_rounding(lo, hi, fit)
    show = _clock if name.endswith(".hour") else _short
    value = _clock(_hour(raw)) if name.endswith(".hour") else _number(raw)
    plan = schema.columns[schema.numeric_sources[j]]
    if plan.clock and name == plan.name:  # read off a clock's text ("0:31:48"): shown so
        show = functools.partial(_as_written, clock=plan.clock)
    if plan.after and name == plan.since_name:  # a time since: the cell itself is a date
        value = _short(float(model.in_units(prep.y[i : i + 1, :])[0, j]))
    # A column written with its unit ("70.5 kg") is read in it (nrad.preprocess.units_of).
    unit = f" {plan.unit}" if plan.unit and name == plan.name else ""
    typical = show(lo) if show(lo) == show(hi) else f"{show(lo)} to {show(hi)}"
    return (f"{name} {value} (typical{context}: {typical}{unit}; {show(fit)}{unit} would fit the rest "
            "of this row)")  # fmt: skip


def _categorical_reason(model: TableModel, prep: Prepared, i: int, f: int, best: int, raw: Any) -> str:
    cats, schema = model.categories, model.schema
    n_cat = len(schema.categorical_names)
    code = int(prep.codes[i, f])
    n = int(cats.counts[f].sum())
    if f >= n_cat:  # a number's indicator: missing, at its spike, or off it
        name = schema.numeric_names[model.indicator_features[f - n_cat]]
        seen = int(cats.counts[f][code])
        if code == cats.n_codes[f] - 1:
            return f"{name} missing (in {seen} of {n} training rows)"
        spike = schema.columns[schema.numeric_sources[model.indicator_features[f - n_cat]]].spike
        if code == 0 and spike is not None:
            return f"{name} {_number(raw)}: not {spike:g}, as in {seen} of {n} training rows"
        return f"{name} {_number(raw)} (as in {seen} of {n} training rows)"
    name = schema.categorical_names[f]
    label = _label(model, f, code, raw)
    seen = int(cats.counts[f][code])
    if code == cats.n_codes[f] - 2:
        phrase = (
            "not among the levels seen in training"
            if seen == 0
            else f"a level seen fewer than twice in {n} training rows"
        )
    else:
        phrase = f"{seen} of {n} training rows"
    parent = cats.parent[f]
    if parent >= 0:
        a = int(prep.codes[i, parent])
        table = cats.joint[f]
        together, with_parent = int(table[a, code]), int(table[a].sum())
        given = feature_level(model, parent, a)
        phrase += f"; {together} of {with_parent} with {given}"
    if best != code:
        phrase += f"; fits best: {_label(model, f, best)}"
    return f"{name} {label} ({phrase})"


def _hour(raw: Any) -> float:
    t = pd.to_datetime(raw, errors="coerce", utc=True)
    return float("nan") if pd.isna(t) else t.hour + t.minute / 60.0


def _clock(hours: float) -> str:
    if not np.isfinite(hours):
        return "?"
    minutes = int(round(float(hours) * 60)) % (24 * 60)
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _as_written(value: float, clock: str) -> str:
    """A number of hours (or minutes, ``clock`` "m:ss") as the column writes it: ``"0:31:48"``."""
    if not np.isfinite(value):
        return "?"
    seconds = int(round(abs(value) * (60 if clock == "m:ss" else 3600)))
    sign = "-" if value < 0 and seconds else ""
    if clock == "m:ss":
        return f"{sign}{seconds // 60}:{seconds % 60:02d}"
    if clock == "h:mm":
        minutes = int(round(seconds / 60))
        return f"{sign}{minutes // 60}:{minutes % 60:02d}"
    return f"{sign}{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _zero_below_rounding(lo: float, hi: float, fit: float) -> tuple[float, float, float]:
    """The typical range and the repair, with what is 0 but for rounding shown as 0.

    The shape and context transforms and their inverses leave a 0 at 1e-17 ("8.88e-17 would
    fit the rest of this row" beside a typical range of 1.1 to 3.3): a value below a billionth
    of the typical values' size is that 0."""
    size = max(abs(lo), abs(hi))
    return tuple(0.0 if abs(v) < 1e-9 * size else v for v in (lo, hi, fit))  # type: ignore[return-value]


def column_handling(model: TableModel, c: int) -> str:
    """How the model reads input column ``c``, in a few words (report, docs)."""
    plan = model.schema.columns[c]
    if plan.kind == "numeric":
        j = model.schema.numeric_names.index(plan.name)
        parent = int(model.numeric.parent[j])
        exponent = float(model.numeric.exponent[j])
        text = (
            "numeric"
            if exponent == 1
            else (
                "numeric, log scale"
                if exponent == 0
                else f"numeric, power transform (exponent {exponent:.2g})"
            )
        )
        if model.numeric.discrete[j] > 0:
            text += f", steps of {model.numeric.discrete[j]:.4g}"
        if parent >= 0:
            text += f", read given {model.schema.categorical_names[parent]}"
        return text
    if plan.kind == "datetime":
        parts = ["hour of day"] * plan.has_hour + ["weekday"]
        parts += [f"{plan.after_unit} since {plan.after}"] if plan.after else []
        return "datetime: " + (", ".join(parts[:-1]) + " and " if len(parts) > 1 else "") + parts[-1]
    f = model.schema.categorical_names.index(plan.name)
    text = f"categorical, {len(plan.levels)} levels kept"
    parent = model.categories.parent[f]
    if parent >= 0:
        text += f", depends on {model.schema.categorical_names[parent]}"
    return text


# -- what a user reads: top_features and reason -------------------------------------------


def describe(
    model: TableModel,
    df: pd.DataFrame,
    prep: Prepared | None = None,
    what: str = "data",
    in_sample: bool = False,
    rows: np.ndarray | None = None,
    k: int = TOP_FEATURES,
) -> tuple[list[str], list[str]]:
    """``top_features`` (``"amount (81%); merchant (19%)"``) and ``reason`` (the first column in words).

    ``rows``: only these positions of ``df`` (default all); ``in_sample``:
    ``df`` is the table the model was just fitted on.
    """
    df = as_pandas(df)
    folds = model.training_folds(len(df)) if in_sample else None
    prep = model.prepare(df, what) if prep is None else prep
    if rows is not None:
        df, prep = df.iloc[rows], prep.take(rows)
        folds = None if folds is None else folds[rows]
    if len(df) == 0:
        return [], []
    result = repair(model, prep, folds)
    names = np.asarray(model.schema.names)
    order, gains = ranked(model, prep, result, folds, k)
    scores, density, z, _ = model.scores_prepared(prep, folds)
    p, cause = row_p_values(model, prep, scores, z, folds, density)
    order, gains = _cause_first(model, cause, result, order, gains)
    rules = rule_reasons(model, df, prep, order[:, 0], new_rows=folds is None)
    # A rule decided the row (p-value 0) and the column the repair puts first breaks none: the
    # rule's cell is named first.  A total that is not the instalments times the term is the
    # total's error, not the loan amount's, whose repair gives back most of a density that the
    # total's break hardly moves; among a rule's cells the repair still chooses.
    unruled = np.array([rule is None for rule in rules[0]], dtype=bool)
    # So is a difference's cell that also breaks an identity or stands beyond its own column's
    # wall, before its partner that breaks the difference alone (a total below the loan amount,
    # and not its instalments times the term).
    unruled |= _rule_cell_second(model, prep, cause, order[:, 0], folds is None)
    moved = np.flatnonzero((p == 0) & (cause >= 0) & (order[:, 0] != cause) & unruled)
    for i in moved:
        _put_first(order, gains, result, int(i), int(cause[i]))
    if len(moved):
        # Only the moved rows' first column changed: their rules are read again, not every row's.
        again = rule_reasons(model, df.iloc[moved], prep.take(moved), order[moved, 0], new_rows=folds is None)
        for j, i in enumerate(moved):
            rules[0][i] = again[0][j]
    top = [
        feature_shares(names[row], row_gains, ruled=rule is not None)
        for row, row_gains, rule in zip(order, gains, rules[0], strict=True)
    ]
    return top, reasons(model, df, prep, result, order[:, 0], rules, in_sample=folds is not None)


def _rule_cell_second(
    model: TableModel, prep: Prepared, cause: np.ndarray, first: np.ndarray, new_rows: bool
) -> np.ndarray:
    """(n,) True where the column named first and the row's cause are the two cells of a wall of
    their difference the row breaks, and only the cause breaks an identity or stands beyond its
    own column's wall too."""
    out = np.zeros(len(cause), dtype=bool)
    ident, walls = model.identities, model.walls_for(new_rows=new_rows)
    if walls is None or walls.pairs is None or not len(walls.pairs):
        return out
    raw = model.raw_values(prep)
    blamed, in_pair = walls.own_beyond(raw), walls.pair_cells(raw)
    if ident is not None and ident.n_identities:
        n_cat = len(model.schema.categorical_names)
        blamed |= ident.broken(raw, prep.codes[:, :n_cat])[0]
    feature = np.full(len(model.schema.columns), -1)
    feature[np.asarray(model.schema.numeric_sources)] = np.arange(len(model.schema.numeric_sources))
    at_cause, at_first = feature[np.maximum(cause, 0)], feature[first]
    ok = (cause >= 0) & (at_cause >= 0) & (at_first >= 0)
    r, c, f = np.arange(len(cause)), np.maximum(at_cause, 0), np.maximum(at_first, 0)
    return ok & in_pair[r, c] & in_pair[r, f] & blamed[r, c] & ~blamed[r, f]


def _cause_first(
    model: TableModel, cause: np.ndarray, result: Any, order: np.ndarray, gains: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Rows whose p-value came from one cell name that cell first (the others follow in order).

    Unless the cell's residual decided and the column the repairs put first is related to it: a
    broken relation's residuals are the same break read from each side (a gross that is not the
    net plus the VAT: the net is as far from what the gross says as the gross from what the net
    says), their p-values differ by how heavy each column's residual tail is, and the repair
    says which single change mends the row (the gross, which its euro copy contradicts too).
    """
    order, gains = order.copy(), gains.copy()
    related = _related_columns(model)
    numeric = np.zeros(len(model.schema.columns), dtype=bool)
    numeric[np.asarray(model.schema.numeric_sources, dtype=np.int64)] = True
    for i in np.flatnonzero(cause >= 0):
        c = int(cause[i])
        if order[i, 0] == c or (numeric[c] and related[c, order[i, 0]]):
            continue
        _put_first(order, gains, result, int(i), c)
    return order, gains


def _put_first(order: np.ndarray, gains: np.ndarray, result: Any, i: int, c: int) -> None:
    """Row ``i`` names column ``c`` first, the others after it in their order (in place)."""
    rest = [j for j in order[i] if j != c][: order.shape[1] - 1]
    rest_gains = [g for j, g in zip(order[i], gains[i], strict=True) if j != c][: order.shape[1] - 1]
    order[i] = [c, *rest]
    # The cell's own repair gain (what repairing it alone gives back), at least a trace so that
    # it is listed.
    gains[i] = [max(float(result.gains[i, c]), 0.01), *rest_gains]


#: A column is listed in ``top_features`` only with at least this share of what the listed ones
#: give back (the first column always is).
MIN_SHARE = 0.05


def feature_shares(names: Any, gains: np.ndarray, ruled: bool = False) -> str:
    """``"weight (70%); height (21%); repwt (9%)"``: each named column's share of what repairing the
    named columns gives back (the first always named; others from ``MIN_SHARE``).

    ``ruled``: the first column breaks a rule (a wall, an identity, a dependency: ``nrad.rules``),
    which flagged its row whatever its repair gives back, often nothing: it is written
    ``"gross_eur (0%, rule broken)"``, so that a share of 0% does not read as "no matter"."""
    gains = np.maximum(np.asarray(gains, dtype=np.float64), 0.0)
    total = gains.sum()
    if not total > 0:
        return f"{names[0]} (rule broken)" if ruled and len(names) else ""
    parts = []
    for k, (name, gain) in enumerate(zip(names, gains, strict=True)):
        share = gain / total
        if k == 0 or share >= MIN_SHARE:
            rule = ", rule broken" if k == 0 and ruled else ""
            parts.append(f"{name} ({share:.0%}{rule})")
    return "; ".join(parts)


def first_feature(top_features: str) -> str:
    """The column ``top_features`` names first ("" for none)."""
    first = str(top_features).split("; ")[0]
    return first.rsplit(" (", 1)[0] if first else ""

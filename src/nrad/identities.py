"""Identities: exact relations between numeric columns, and the rows that break them.

Many tables hold columns computed from others: a gross that is the net plus
the VAT, a VAT that is the net times its country's rate, a total in euros
that is the total times its currency's rate, a volume that is length times
width times height, a consumption that is this reading of a counter less the
last.  A row whose cells break such a relation (a gross with a digit too
many, a pound invoice whose euro total is its pound total, a parcel whose
height was copied from another) need not hold any value out of place, nor be
off a relation by more than ordinary rows are off the relations a model
learns with noise; but the relation held in every other row, to the last
rounding, and here it does not.

So an identity is searched where none of the other tests can see one: each
numeric column regressed on the others by least squares, in three forms,

* ``x_a = c + sum_j b_j x_j`` over all rows;
* ``log x_a = c + sum_j b_j log x_j`` over all rows (products and ratios:
  a volume, a body-mass index), where the columns are positive;
* ``x_a = c_l + sum_j b_lj x_j`` within each level ``l`` of one categorical
  column (a rate per country, per currency, per tariff),
* ``log x_a = c_l + sum_j b_lj log x_j`` within each level (a fee per guest
  and night that each hotel sets: a product with a factor per level),

and kept when it holds, in all but ``MAX_BROKEN`` of the rows it was fitted
on, to within what rounding the columns to their written decimals can make
(each cell is within half its last digit of the value it records, so the
relation can be off by half the response's last digit plus each
predictor's times its coefficient), plus the fitted coefficients'
uncertainty, and where few rows (``MAX_SHOULDER``) miss by less than
``BROKEN_MARGIN`` tolerances: a computed column's rows are within rounding
or, where a cell is wrong, far off; a measured relation's misses pile up just
past rounding.  The fit is resistant to the rows that break it (a table fitted
on itself holds them): a first least-squares fit on the rows whose values
are all in their columns' bulk, a second on the half of all rows it fits
best, a last one on the rows within the rounding; then the predictors are
pruned, smallest term first, while the identity holds as well without them.
Within levels, a column that an identity over all rows gives is searched
without that identity's predictors (``vat = gross - net`` would otherwise
hide ``vat = 19% of net`` in Germany, which an invoice without VAT breaks).

A row off a kept identity by more than ``BROKEN_MARGIN`` times its
tolerance breaks it.  What breaks is one or more of its cells, not which:
the cells blamed are those of its broken identities that no identity the
row keeps involves (a gross typed with a digit too many breaks "gross = net
+ VAT" and "VAT = 19% of net" holds, which clears the net and the VAT); if
every such cell is cleared too, all of them.  A row that keeps the same
identity of another level of the category (a bill at another tariff's rate)
blames its level too.  The blamed cells get p-value 0,
as a value beyond a wall does (:class:`nrad.cells.Walls`): the assumption
stated is that the relation is one the table's columns are built on.
Noise breaks no identity: a relation with noise (a cost with a 2% spread
about its tariff) is not exact, and is left to the robust Gaussian's
residuals (:mod:`nrad.gaussian`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from nrad.rowwise import rows_times

#: An identity may be broken by at most this share of the rows it is fitted on (a table fitted on
#: itself holds its errors), and by at least one row.
MAX_BROKEN = 0.01
#: At most this share of the rows (and at least one) may lie off an identity by more than their
#: tolerance but within ``BROKEN_MARGIN`` of it: an exact relation's rows are within rounding or,
#: when a cell is wrong, far off; misses that pile up just past rounding are a measured relation's
#: (a depth measured apart from the dimensions it relates to), whose tolerance is not known.
MAX_SHOULDER = 0.001
#: A row off an identity by more than this many times its rounding tolerance breaks it; a row
#: between the tolerance and this counts against the identity's exactness but is not flagged.
BROKEN_MARGIN = 3.0
#: An identity's response takes at least this many distinct values where it is fitted: a relation
#: to a column of a few values is a category's business (and a few values fit by chance).
MIN_DISTINCT = 10
#: ... and its tolerance is at most this share of the response's spread (median absolute
#: deviation): rounding that blurs a relation over much of the column's range pins nothing.
MAX_TOLERANCE_SHARE = 0.2
#: Rows an identity is fitted on: at least this many, and at least this many per coefficient.
MIN_ROWS = 30
ROWS_PER_COEFFICIENT = 5
#: Rows a least-squares fit reads at most (a random subset beyond; every row is checked).
MAX_FIT_ROWS = 5000
#: In a table of more numeric columns than this, each column's identity is searched among the
#: ``MAX_PREDICTORS`` columns whose ranks follow its own most closely, not among all the others:
#: least squares on every other column costs the width cubed per column (minutes at 500 columns,
#: where the rest of the model takes seconds), and the columns a computed one is made of follow it
#: (a total of more than 16 columns is not searched for).
WIDE = 128
MAX_PREDICTORS = 16
#: Identities within levels are searched among at most this many numeric columns ...
MAX_LEVEL_COLUMNS = 24
#: ... within categorical columns of at most this many levels.
MAX_LEVELS = 30
#: A column enters the search when present in at least this share of the rows.
MIN_PRESENT = 0.9
#: Digits after the point a value is read to at most (beyond: a float's own precision).
MAX_DECIMALS = 9
#: A column's decimals are the most that at least this share of its values are written with.
DIGIT_SHARE = 0.01
#: Relative floating-point error allowed on top of the rounding (the values pass through the
#: numeric model's transform and back).
FLOAT_ERROR = 1e-9
#: A predictor is part of an identity when its term is at least this share of the response's
#: typical size (least squares spreads a little weight over columns that follow the others).
INVOLVED = 1e-3
#: Prediction uncertainty of the fitted coefficients, in standard errors, added to the tolerance.
SE_MARGIN = 6.0

#: The forms searched: in the table's units, in logs, in logs with whole-number factors exact
#: (counts: see :func:`_tolerance`), and in the table's units with whole numbers exact (a count
#: that is the sum of others: a household's size its adults and its children).
FORMS = ("units", "log", "counts", "whole")
#: Within one level, an identity may be off in at most this share of the rows (the share over all
#: the levels it holds in is ``MAX_BROKEN``: errors of a table cluster in a level by chance).
LEVEL_MAX_OFF = 0.1
#: The first fit reads the rows whose values are within this many interquartile ranges of their
#: columns' medians.
BULK_SPREADS = 10.0


@dataclass
class Fit:
    """One identity as fitted: coefficients, scaled inverse Gram matrix, rows off it, rows read."""

    coef: np.ndarray
    gram: np.ndarray
    off: int
    shoulder: int
    rows: int

    def accepted(self) -> bool:
        return _accepted(self.off, self.shoulder, self.rows)


def _accepted(off: int, shoulder: int, rows: int) -> bool:
    """Whether ``off`` rows of ``rows`` off an identity, of which ``shoulder`` are off by less than
    ``BROKEN_MARGIN`` tolerances, leave it one (``MAX_BROKEN``, ``MAX_SHOULDER``, at least 1)."""
    return off <= max(1, int(MAX_BROKEN * rows)) and shoulder <= max(1, int(MAX_SHOULDER * rows))


@dataclass
class Identities:
    """Exact relations between numeric features (see the module docstring).

    One row of each array per identity: which form (index into ``FORMS``),
    the response feature, the categorical feature whose level it holds in
    and that level (-1 and -1: all rows), the coefficients over
    ``[intercept, feature 0, ..., feature p-1]`` (0 for a feature not in
    it), and the scaled inverse Gram matrix of the fit (its prediction's
    variance at a row ``u`` is ``u' gram u``).
    """

    form: np.ndarray  # (k,) int64
    response: np.ndarray  # (k,) int64
    feature: np.ndarray  # (k,) int64
    level: np.ndarray  # (k,) int64
    coef: np.ndarray  # (k, p + 1) float64
    gram: np.ndarray  # (k, p + 1, p + 1) float64
    #: (p,) each feature's last written digit's place in the training rows (the rounding allowed).
    step: np.ndarray
    #: (p,) each feature's median absolute training value (what a term is weighed against).
    typical: np.ndarray

    @property
    def n_identities(self) -> int:
        return len(self.response)

    @classmethod
    def fit(
        cls, values: np.ndarray, codes: np.ndarray, n_codes: list[int], random_state: int = 0
    ) -> Identities:
        """From (n, p) training values in the table's units (NaN where missing) and the (n, c)
        codes of the categorical features, of which feature ``f`` has ``n_codes[f]`` codes (its
        last two: rare levels pooled, and missing)."""
        # Column-major: the search reads a few columns' rows at a time, hundreds of times over.
        values = np.asfortranarray(values, dtype=np.float64)
        n, p = values.shape
        rng = np.random.default_rng(random_state)
        present = np.isfinite(values).mean(axis=0) >= MIN_PRESENT if n else np.zeros(p, dtype=bool)
        columns = np.flatnonzero(present)
        found: list[tuple[int, int, int, int, np.ndarray, np.ndarray]] = []
        step = _resolution(values)
        typical = _typical(values)
        if len(columns) < 2 or n < MIN_ROWS:
            return cls._of(found, step, typical)
        logs = np.asfortranarray(_logs(values))
        positive = columns[np.isfinite(logs[:, columns]).mean(axis=0) >= MIN_PRESENT]
        everywhere = np.ones(n, dtype=bool)
        in_units = _Form(values, values, step, typical, False, False, rng)
        whole_units = _Form(values, values, step, typical, False, True, rng)
        whole = columns[step[columns] >= 1.0]
        # In logs, whole-number factors exact first, then read as rounded (see _tolerance).
        in_logs = (
            _Form(logs, values, step, typical, True, True, rng),
            _Form(logs, values, step, typical, True, False, rng),
        )
        closest = _closest(values, columns, rng) if len(columns) > WIDE else None
        for a in columns:
            others = columns[columns != a] if closest is None else closest[a]
            got = in_units.search(a, others, everywhere)
            if got is not None and got.accepted():
                found.append((0, int(a), -1, -1, got.coef, got.gram))
            elif a in whole and len(whole_others := np.intersect1d(others, whole)):
                # A count made of counts, to the unit (see _tolerance).
                got = whole_units.search(a, whole_others, everywhere)
                if got is not None and got.accepted():
                    found.append((3, int(a), -1, -1, got.coef, got.gram))
            positive_others = positive[positive != a] if closest is None else np.intersect1d(others, positive)
            if a in positive and len(positive_others) >= 1:
                for index, form in ((2, in_logs[0]), (1, in_logs[1])):
                    got = form.search(a, positive_others, everywhere)
                    if got is not None and got.accepted():
                        found.append((index, int(a), -1, -1, got.coef, got.gram))
                        break
        # A column an identity over all rows gives (vat = gross - net) may keep another within each
        # level (vat = the country's rate x the euro total) that a row breaks while keeping the first
        # (no VAT charged, and the gross set to the net): searched without the first's predictors.
        # So in logs: a fee per guest and night that each hotel sets (tax = rate x guests x nights)
        # holds within each level as a product, which neither form over all rows finds.
        # Each column of such an identity, not only its response: searched for the fare, the levels
        # would each find "fare = total - extra - tip - tolls - 1.50" again (without the tolls
        # where a level's training rows paid none, and a new row of that level paying tolls broke
        # it).
        given: dict[int, np.ndarray] = {}
        for _, a, _, _, coef, _ in found:
            involved = np.union1d([a], np.flatnonzero(coef[1:])).astype(np.int64)
            for b in involved:
                given[b] = np.union1d(given.get(b, []), involved[involved != b]).astype(np.int64)
        if len(columns) <= MAX_LEVEL_COLUMNS:
            for f, k in enumerate(n_codes):
                if not 2 <= k - 2 <= MAX_LEVELS:
                    continue
                for a in columns:
                    # In the table's units first; in logs only where that finds none (a rate per
                    # level with no intercept is both), and with whole-number factors exact alone
                    # (each form searched costs a fit per level and column).
                    tries = [(0, in_units, columns)]
                    if a in positive:
                        tries.append((2, in_logs[0], positive))
                    for index, form, pool in tries:
                        predictors = np.setdiff1d(pool, np.r_[a, given.get(a, [])])
                        got = _within_levels(form, index, int(a), predictors, codes[:, f], f, k - 2)
                        if got:
                            found += got
                            break
        return cls._of(found, step, typical)

    @classmethod
    def _of(cls, found: list, step: np.ndarray, typical: np.ndarray) -> Identities:
        p = len(step)
        if not found:
            return cls(*(np.zeros(0, dtype=np.int64) for _ in range(4)), np.zeros((0, p + 1)),
                       np.zeros((0, p + 1, p + 1)), step, typical)  # fmt: skip
        form, response, feature, level, coef, gram = zip(*found, strict=True)
        as_int = lambda v: np.asarray(v, dtype=np.int64)  # noqa: E731
        return cls(as_int(form), as_int(response), as_int(feature), as_int(level), np.stack(coef),
                   np.stack(gram), step, typical)  # fmt: skip

    def breaking(self, values: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(n, k) True where a row lies in an identity's level (or any row, for one over all rows)
        and is off it by more than ``BROKEN_MARGIN`` tolerances; and the (n, k) distances
        (:meth:`distances`)."""
        values = np.asarray(values, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            distance = self.distances(values)
            off = distance > BROKEN_MARGIN
        mine = np.ones(off.shape, dtype=bool)
        within = np.flatnonzero(self.feature >= 0)
        mine[:, within] = codes[:, self.feature[within]] == self.level[within]
        return off & mine, distance

    def broken(
        self, values: np.ndarray, codes: np.ndarray, distance: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Where rows break an identity: (n, p) True at the numeric cells blamed, (n, c) True at the
        categorical cells blamed (see the module docstring); ``distance``: the rows'
        :meth:`distances`, when already computed.

        A row that breaks an identity of its level and keeps the same identity of another level
        (a bill computed at another tariff's rate, a pound total converted at the euro's rate of
        1) has numbers that agree with each other: its level is what is wrong, and is blamed."""
        values = np.asarray(values, dtype=np.float64)
        n, p = values.shape
        blamed = np.zeros((n, p), dtype=bool)
        level_blamed = np.zeros((n, codes.shape[1]), dtype=bool)
        if not self.n_identities or not n:
            return blamed, level_blamed
        with np.errstate(invalid="ignore"):
            distance = self.distances(values) if distance is None else distance
            breaks, keeps = distance.T > BROKEN_MARGIN, distance.T <= 1.0
        cleared = self.kept(values, codes, distance)
        for k in range(self.n_identities):
            f = self.feature[k]
            mine = np.ones(n, dtype=bool) if f < 0 else codes[:, f] == self.level[k]
            broke = mine & breaks[k]
            if f >= 0:
                same = (
                    (self.feature == f) & (self.response == self.response[k]) & (self.level != self.level[k])
                )
                elsewhere = np.any([keeps[m] for m in np.flatnonzero(same)], axis=0) if same.any() else False
                level_blamed[:, f] |= broke & elsewhere
                broke &= ~elsewhere
            blamed[np.ix_(broke, self.involved(k))] = True
        # Of two categories blamed (a country and its currency), the coarser: the one whose fewer
        # levels carry the identity.
        if codes.shape[1]:
            levels = np.array([len(np.unique(self.level[self.feature == f])) for f in range(codes.shape[1])])
            ranked = np.where(level_blamed, levels[None, :], np.iinfo(np.int64).max)
            coarsest = ranked.argmin(axis=1)
            level_blamed = level_blamed & (np.arange(codes.shape[1])[None, :] == coarsest[:, None])
        # The cells of a row's broken identities that none it keeps involves; all of them if none.
        suspect = blamed & ~cleared
        return np.where(suspect.any(axis=1, keepdims=True), suspect, blamed), level_blamed

    def kept(self, values: np.ndarray, codes: np.ndarray, distance: np.ndarray | None = None) -> np.ndarray:
        """(n, p) True at the numeric cells an identity involves (:meth:`involved`) that their row
        keeps to within rounding, in the identity's level: the table vouches for their values.
        ``distance``: the rows' :meth:`distances`, when already computed."""
        values = np.asarray(values, dtype=np.float64)
        out = np.zeros(values.shape, dtype=bool)
        if not self.n_identities:
            return out
        with np.errstate(invalid="ignore"):
            keeps = (self.distances(values) if distance is None else distance) <= 1.0
        for k in range(self.n_identities):
            f = self.feature[k]
            mine = keeps[:, k] if f < 0 else keeps[:, k] & (codes[:, f] == self.level[k])
            out[np.ix_(mine, self.involved(k))] = True
        return out

    def distances(self, values: np.ndarray) -> np.ndarray:
        """(n, k): how far each row is off each identity, in tolerances (at most 1: within rounding;
        beyond ``BROKEN_MARGIN``: broken), whatever its level; NaN where a cell it needs is absent."""
        values = np.asarray(values, dtype=np.float64)
        logs = _logs(values)
        out = np.empty((len(values), self.n_identities))
        for k in range(self.n_identities):
            log, counts = _form_reads(int(self.form[k]))
            form_values = logs if log else values
            off, tol = _off(
                form_values, values, self.step, self.response[k], self.coef[k], self.gram[k], log, counts
            )
            with np.errstate(invalid="ignore", divide="ignore"):
                out[:, k] = off / tol
        return out

    def involved(self, k: int) -> np.ndarray:
        """The features of identity ``k``: its response and each predictor whose term is not
        negligible against the response's typical size."""
        coef = self.coef[k][1:]
        # In logs a term's weight is its exponent.
        typical = self.typical if not _form_reads(int(self.form[k]))[0] else np.ones(len(coef))
        out = np.abs(coef) * typical >= INVOLVED * max(float(typical[self.response[k]]), np.finfo(float).tiny)
        out[self.response[k]] = True
        return out

    def predicted(self, k: int, values: np.ndarray) -> np.ndarray:
        """(n,) the response of identity ``k`` as its predictors give it, in the table's units (NaN
        where a cell it needs is absent or, in logs, not positive)."""
        values = np.asarray(values, dtype=np.float64)
        log = _form_reads(int(self.form[k]))[0]
        form_values = _logs(values) if log else values
        coef = self.coef[k]
        predictors = np.flatnonzero(coef[1:] != 0)
        predictors = predictors[predictors != self.response[k]]
        fitted = coef[0] + form_values[:, predictors] @ coef[1:][predictors]
        return np.exp(fitted) if log else fitted

    def formula(self, k: int, names: list[str], short: Callable[[float], str]) -> str:
        """Identity ``k`` as a person reads it: ``"vat = 0.19 × net"``, ``"gross = net + vat"``,
        ``"city_tax = 2.5 × adults × nights"``: the terms that matter (:meth:`involved`), each
        coefficient written by ``short``."""
        a, coef = int(self.response[k]), self.coef[k]
        involved = self.involved(k)
        involved[a] = False
        predictors = np.flatnonzero(involved)
        if not _form_reads(int(self.form[k]))[0]:
            terms = [(float(coef[1 + j]), names[j]) for j in predictors]
            # The intercept is written where it is more than the response's rounding.
            if abs(coef[0]) > self.step[a] / 2.0:
                terms.insert(0, (float(coef[0]), ""))
            text = ""
            for b, name in terms:
                size = abs(b)  # the sign goes between the terms
                unit = short(size) == short(1.0)
                part = short(size) if not name else name if unit else f"{short(size)} × {name}"
                sign = "-" if b < 0 else "+"
                text = f"{text} {sign} {part}" if text else f"-{part}" if b < 0 else part
            return f"{names[a]} = {text or short(0.0)}"
        factor = float(np.exp(coef[0]))
        parts = [] if short(factor) == short(1.0) else [short(factor)]
        below = []
        for j in predictors:
            b = float(coef[1 + j])
            # An exponent fitted to logs of rounded values (0.997) is written as the whole number
            # or the two digits it stands for.
            exponent = f"{abs(b):.2g}"
            power = "" if exponent == "1" else f"^{exponent}"
            (below if b < 0 else parts).append(f"{names[j]}{power}")
        text = " × ".join(parts) or "1"
        return f"{names[a]} = {text}" + "".join(f" / {name}" for name in below)

    def to_state(self, prefix: str) -> dict[str, np.ndarray]:
        return {
            f"{prefix}form": self.form, f"{prefix}response": self.response,
            f"{prefix}feature": self.feature, f"{prefix}level": self.level,
            f"{prefix}coef": self.coef, f"{prefix}gram": self.gram, f"{prefix}step": self.step,
            f"{prefix}typical": self.typical,
        }  # fmt: skip

    @classmethod
    def from_state(cls, arrays: dict[str, np.ndarray], prefix: str, p: int, n_codes: list[int]) -> Identities:
        ints = [np.asarray(arrays[f"{prefix}{name}"], dtype=np.int64).reshape(-1)
                for name in ("form", "response", "feature", "level")]  # fmt: skip
        k = len(ints[0])
        coef = np.asarray(arrays[f"{prefix}coef"], dtype=np.float64).reshape(k, p + 1)
        gram = np.asarray(arrays[f"{prefix}gram"], dtype=np.float64).reshape(k, p + 1, p + 1)
        step = np.asarray(arrays[f"{prefix}step"], dtype=np.float64).reshape(p)
        typical = np.asarray(arrays[f"{prefix}typical"], dtype=np.float64).reshape(p)
        form, response, feature, level = ints
        levels = np.array([n_codes[f] - 2 if 0 <= f < len(n_codes) else 0 for f in feature], dtype=np.int64)
        if (
            any(len(a) != k for a in ints)
            or not ((form >= 0) & (form < len(FORMS))).all()
            or not ((response >= 0) & (response < p)).all()
            or not ((feature >= -1) & (feature < len(n_codes))).all()
            or not np.where(feature < 0, level == -1, (level >= 0) & (level < levels)).all()
            or not (
                np.isfinite(coef).all()
                and np.isfinite(gram).all()
                and (step > 0).all()
                and np.isfinite(typical).all()
            )
        ):
            raise ValueError(f"identities must name features 0 to {p - 1} and levels of the categories")
        return cls(form, response, feature, level, coef, gram, step, typical)


def _form_reads(form: int) -> tuple[bool, bool]:
    """Whether form ``form`` (index into ``FORMS``) reads logs, and whether it takes whole numbers
    as exact."""
    return FORMS[form] in ("log", "counts"), FORMS[form] in ("counts", "whole")


def _within_levels(
    form: _Form, index: int, a: int, predictors: np.ndarray, codes: np.ndarray, f: int, levels: int
) -> list[tuple[int, int, int, int, np.ndarray, np.ndarray]]:
    """The identities of feature ``a`` within each level of categorical feature ``f`` (``codes``,
    ``levels`` of them) in ``form`` (``index`` into ``FORMS``): one claim, "within each level, an
    identity", held to ``MAX_BROKEN`` over the rows of the levels where it holds (at least two)."""
    if not len(predictors):
        return []
    fits = {}
    for level in range(levels):
        got = form.search(a, predictors, codes == level)
        if got is not None:
            fits[level] = got
    off, shoulder, rows = (
        sum(getattr(g, count) for g in fits.values()) for count in ("off", "shoulder", "rows")
    )
    if len(fits) < 2 or not _accepted(off, shoulder, rows):
        return []
    return [(index, a, f, level, g.coef, g.gram) for level, g in fits.items()]


def _closest(values: np.ndarray, columns: np.ndarray, rng: np.random.Generator) -> dict[int, np.ndarray]:
    """For each of ``columns``, the ``MAX_PREDICTORS`` others whose ranks correlate most with its own
    (on at most ``MAX_FIT_ROWS`` random rows; absent cells at the middle rank), sorted by index.
    Ranks, so that a column's products and ratios (the log form) are found as its sums are, and
    a few gross values do not decide."""
    rows = np.arange(len(values))
    if len(rows) > MAX_FIT_ROWS:
        rows = np.sort(rng.choice(rows, MAX_FIT_ROWS, replace=False))
    block = values[np.ix_(rows, columns)]
    ranks = np.zeros(block.shape)
    for k in range(block.shape[1]):
        seen = np.isfinite(block[:, k])
        order = np.argsort(np.argsort(block[seen, k], kind="stable"), kind="stable")
        ranks[seen, k] = order - (seen.sum() - 1) / 2.0
    norms = np.sqrt((ranks**2).sum(axis=0))
    corr = np.abs(ranks.T @ ranks) / np.maximum(np.outer(norms, norms), 1e-300)
    np.fill_diagonal(corr, -1.0)
    top = np.argsort(-corr, axis=1, kind="stable")[:, :MAX_PREDICTORS]
    return {int(a): np.sort(columns[top[k]]) for k, a in enumerate(columns)}


def _logs(values: np.ndarray) -> np.ndarray:
    """The values' natural logs, NaN where a value is not positive (the log form's cells)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(values > 0, np.log(values), np.nan)


def _typical(values: np.ndarray) -> np.ndarray:
    """(p,) each column's median absolute value where it is not 0 (1 for a column without such).

    Where it is not 0: a column that is 0 in most rows (tolls, a second floor's area) is a term
    of its identity wherever it is not, and its median of 0 called its term negligible, so that
    "total = fare + extra + tip + tolls + 1.50" was refitted without the tolls and not kept."""
    out = np.ones(values.shape[1])
    for j in range(values.shape[1]):
        x = np.abs(values[:, j][np.isfinite(values[:, j])])
        x = x[x > 0]
        out[j] = float(np.median(x)) if len(x) else 1.0
    return out


def _resolution(values: np.ndarray) -> np.ndarray:
    """(p,) each column's last written digit's place: ``10**-d`` for the most decimals that at least
    ``DIGIT_SHARE`` of its values are written with (at most ``MAX_DECIMALS``; 1 without values).

    A column's, not a cell's: an export writes a column to fixed decimals, and a cell that reads
    0 or 10.7 says nothing about the digits its column keeps (0.00, 10.70)."""
    p = values.shape[1]
    out = np.ones(p)
    for j in range(p):
        x = values[:, j][np.isfinite(values[:, j])]
        if not len(x):
            continue
        decimals = np.full(len(x), MAX_DECIMALS)
        for d in range(MAX_DECIMALS, -1, -1):
            scaled = x * 10.0**d
            whole = np.abs(scaled - np.round(scaled)) <= 1e-6 * np.maximum(1.0, np.abs(scaled) * 1e-9)
            decimals[whole] = d
        out[j] = 10.0 ** -int(np.quantile(decimals, 1.0 - DIGIT_SHARE, method="higher"))
    return out


def _bulk(block: np.ndarray) -> np.ndarray:
    """Rows of ``block`` whose every value is within ``BULK_SPREADS`` interquartile ranges of its
    column's median, or of its 5-95% range where the middle half is one value.

    A column whose middle half is one value (40 hours a week, no overtime, a full-time share of 1)
    has no interquartile range: read by it, the bulk was the rows at that value, the fit never saw
    the column vary, and "monthly pay = salary x full-time share / 12" was off in every part-timer's
    row and not kept."""
    p5, low, mid, high, p95 = np.percentile(block, [5, 25, 50, 75, 95], axis=0)
    spread = np.where(high > low, high - low, p95 - p5)
    return (np.abs(block - mid) <= BULK_SPREADS * np.maximum(spread, 1e-12)).all(axis=1)


def _least_squares(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least-squares coefficients of ``y`` on ``X`` (its first column the intercept), 0 for a
    predictor constant over these rows.

    The minimum-norm solution numpy gives spreads the intercept over such a column: in a table
    where most rows work 40 hours and have no overtime, the rows in every column's bulk all hold
    those values, and a first fit on them put weight on both columns, which then moved the relation
    wherever they were not 40 and 0, and "service = 2024 - the hire year" was off in every
    part-timer's row and not kept."""
    varies = np.ones(X.shape[1], dtype=bool)
    varies[1:] = np.ptp(X[:, 1:], axis=0) > 0
    beta = np.zeros(X.shape[1])
    beta[varies] = np.linalg.lstsq(X[:, varies], y, rcond=None)[0]
    return beta


def _design(form_values: np.ndarray, predictors: np.ndarray) -> np.ndarray:
    return np.column_stack([np.ones(len(form_values)), form_values[:, predictors]])


def _tolerance(
    units: np.ndarray,
    step: np.ndarray,
    a: int,
    predictors: np.ndarray,
    beta: np.ndarray,
    log: bool,
    counts: bool = False,
) -> np.ndarray:
    """Per row: how far rounding the cells to their columns' last digits (``step``) can put the
    response off the relation (in the form's scale), plus the floating-point error."""
    half = step / 2.0
    if log:
        # d log x = dx / x: a half digit of a small value is a large share of it.
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = half / np.abs(units)
        if counts:
            # Whole-number factors taken as exact, counts (guests, nights, items): read as rounded, a
            # factor of 1 or 2 would be off by a third or a half, and no product of counts could be
            # checked.  A product that holds with them exact is no accident (the rows must still
            # keep it to the response's rounding); the form is tried first, then the rounded one.
            rel[:, predictors] *= step[predictors] < 1.0
        return rel[:, a] + rows_times(rel[:, predictors], np.abs(beta)) + FLOAT_ERROR
    size = np.abs(units[:, a]) + rows_times(np.abs(units[:, predictors]), np.abs(beta))
    if counts:
        # Whole numbers taken as exact, the response's too: read as rounded, a sum of three small
        # counts could be off by 1.5, more than a fifth of the counts' spread (MAX_TOLERANCE_SHARE),
        # and "size = adults + children" was no identity.  A sum that holds to the unit in all but
        # MAX_BROKEN of the rows is no accident (rounded values summed are off by a unit in many);
        # the form is tried where the rounded one finds none.
        half = half * (step < 1.0)
    return half[a] + half[predictors] @ np.abs(beta) + FLOAT_ERROR * size


@dataclass
class _Form:
    """One form of the search: the values regressed (``values``: the table's values, or their logs
    with ``log``), the values in the table's units (what the tolerance is read from), each
    column's last digit's place and typical size, and the random state that picks fit rows."""

    values: np.ndarray
    units: np.ndarray
    step: np.ndarray
    typical: np.ndarray
    log: bool
    #: With ``log``: whole-number predictors are exact (see :func:`_tolerance`).
    counts: bool
    rng: np.random.Generator

    def search(self, a: int, predictors: np.ndarray, where: np.ndarray) -> Fit | None:
        """The identity of feature ``a`` on ``predictors`` over the rows ``where``: its coefficients
        over ``[intercept, all p features]``, its scaled inverse Gram matrix and how many rows are
        off it, or None if it is not one within ``LEVEL_MAX_OFF`` (the caller decides with
        ``MAX_BROKEN``).

        Found on all ``predictors``, then refitted on those whose terms are not negligible: a row
        missing a cell the identity gives no weight does not leave it unchecked."""
        got = self.fit(a, predictors, where)
        if got is None:
            return None
        typical = np.ones(self.values.shape[1]) if self.log else self.typical
        terms = np.abs(got.coef[1:]) * typical
        kept = predictors[terms[predictors] >= INVOLVED * max(float(typical[a]), np.finfo(float).tiny)]
        if len(kept) < len(predictors) and len(kept):
            got = self.fit(a, kept, where) or got
        else:
            kept = predictors
        # Backward, smallest term first: a predictor goes if the identity holds as well without it.
        # A small weight on a column of coarse digits widens the tolerance by its rounding, and so
        # makes a relation that is not exact look exact; an identity names the columns it needs.
        for j in kept[np.argsort(terms[kept])]:
            if len(kept) == 1:
                break
            trial = kept[kept != j]
            fewer = self.fit(a, trial, where)
            if fewer is not None and fewer.off <= got.off:
                kept, got = trial, fewer
        return got

    def fit(self, a: int, predictors: np.ndarray, where: np.ndarray) -> Fit | None:
        """:meth:`search` on the given predictors."""
        form_values, units, step, log, rng = self.values, self.units, self.step, self.log, self.rng
        counts = self.counts
        p = form_values.shape[1]
        cols = np.r_[a, predictors]
        rows = np.flatnonzero(where & np.isfinite(form_values[:, cols]).all(axis=1))
        need = max(MIN_ROWS, ROWS_PER_COEFFICIENT * (len(predictors) + 1))
        if len(rows) < need or len(np.unique(units[rows, a])) < MIN_DISTINCT:
            return None
        fit_rows = (
            rows if len(rows) <= MAX_FIT_ROWS else np.sort(rng.choice(rows, MAX_FIT_ROWS, replace=False))
        )
        # The identity's own columns alone are copied, the response first and then the predictors
        # (in their order, which is ascending): a wide table searches each of its hundreds of
        # columns, and copying every column's rows for each would cost more than the fits.
        local = np.arange(1, len(cols))
        block = form_values[np.ix_(fit_rows, cols)]
        X, y = _design(block, local), block[:, 0]
        # Resistant least squares: the rows whose values are all in their columns' bulk (a value 1000
        # times too large would pull a first fit through itself), then the half of all rows that fit
        # fits best, then the rows within rounding.
        bulk = _bulk(block)
        start = bulk if bulk.sum() >= need else np.ones(len(fit_rows), dtype=bool)
        beta = _least_squares(X[start], y[start])
        off = np.abs(y - X @ beta)
        best = off <= np.median(off)
        beta = _least_squares(X[best], y[best])
        tol = _tolerance(units[np.ix_(fit_rows, cols)], step[cols], 0, local, beta[1:], log, counts)
        inside = np.abs(y - X @ beta) <= tol
        if inside.sum() < need:
            return None
        beta = _least_squares(X[inside], y[inside])
        residual = y[inside] - X[inside] @ beta
        # Scaled so that u' gram u is the variance of the fitted relation at a row u.
        dof = max(int(inside.sum()) - X.shape[1], 1)
        gram_small = np.linalg.pinv(X[inside].T @ X[inside]) * float(residual @ residual) / dof
        # Over [intercept, the local columns] (the response's own slot 0) to read every row's
        # distance off it, then over [intercept, all p features] to keep.
        m = len(cols)
        coef_local, gram_local = np.zeros(m + 1), np.zeros((m + 1, m + 1))
        slots = np.r_[0, local + 1]
        coef_local[slots] = beta
        gram_local[np.ix_(slots, slots)] = gram_small
        cells = np.ix_(rows, cols)  # all the identity's rows, its own columns
        all_off, all_tol = _off(
            form_values[cells], units[cells], step[cols], 0, coef_local, gram_local, log, counts
        )
        coef, gram = np.zeros(p + 1), np.zeros((p + 1, p + 1))
        place = np.r_[0, predictors + 1]
        coef[place] = beta
        gram[np.ix_(place, place)] = gram_small
        spread = 1.4826 * float(np.median(np.abs(form_values[rows, a] - np.median(form_values[rows, a]))))
        # A response that holds one value in most rows has no spread: "pool area = 0" holds in
        # 99.5% of the rows, to the unit, and is no relation (a tolerance of rounding never fits
        # within no spread; whole numbers read as exact have none).
        if not (spread > 0 and np.median(all_tol) <= MAX_TOLERANCE_SHARE * spread):
            return None
        # Whole numbers read as exact (the form "whole") have no margin past their tolerance: the
        # misses rounding could make are its shoulder.  Codes 0 to 9 of two shares that make 100%
        # sum to 9 in 98.8% of 5,822 rows and to 8 or 10 in the rest: rounded, not counted.
        shoulder_tol = BROKEN_MARGIN * all_tol
        if counts and not log:
            rounded = _off(form_values[cells], units[cells], step[cols], 0, coef_local, gram_local, log)
            shoulder_tol = rounded[1]
        with np.errstate(invalid="ignore"):
            outside = int((~(all_off <= all_tol)).sum())
            shoulder = int(((all_off > all_tol) & (all_off <= shoulder_tol)).sum())
        return Fit(coef, gram, outside, shoulder, len(rows)) if outside <= LEVEL_MAX_OFF * len(rows) else None


def _off(
    form_values: np.ndarray,
    units: np.ndarray,
    step: np.ndarray,
    a: int,
    coef: np.ndarray,
    gram: np.ndarray,
    log: bool,
    counts: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Per row: how far the response is off the identity, and its tolerance (NaN where a cell of
    the identity is absent or, in logs, not positive)."""
    predictors = np.flatnonzero(coef[1:] != 0)
    predictors = predictors[predictors != a]
    beta = coef[1:][predictors]
    u = np.column_stack([np.ones(len(form_values)), form_values[:, predictors]])
    off = np.abs(form_values[:, a] - rows_times(u, np.r_[coef[0], beta]))
    place = np.r_[0, predictors + 1]
    g = gram[np.ix_(place, place)]
    se = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", u, g, u), 0.0))
    return off, _tolerance(units, step, a, predictors, beta, log, counts) + SE_MARGIN * se

"""The rules a row breaks, in words.

Five tests give a cell p-value 0 (:func:`nrad.evidence.row_p_values`): a value beyond its
column's wall, a value off the steps of a column of a few values, two values whose difference
lies beyond its wall (:class:`nrad.cells.Walls`),
cells that break an identity (:class:`nrad.identities.Identities`), and a category value that its
key's level does not allow (:class:`nrad.categories.Dependency`).  The density behind the anomaly
score knows none of these rules, so the repair that explains a row (:mod:`nrad.explain`) has
little to say about such a cell: "gross 246.2 (typical for segment 'retail': 31.7 to 190; 27
would fit the rest of this row)" where the row was flagged because its gross is not its net plus
its VAT.  A row flagged for a rule is explained by the rule, with what the rule gives: "gross
246.2 (the training rows keep gross = net + vat to rounding: 24.6 here)".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from nrad.encoding import Prepared
from nrad.evidence import dependency_breaks
from nrad.numeric import off_lattice
from nrad.words import feature_level, label, number, short

if TYPE_CHECKING:
    from nrad.categories import Dependency
    from nrad.table import TableModel

#: A dependency's allowed values are listed up to this many.
LISTED_LEVELS = 4


def rule_reasons(
    model: TableModel, df: pd.DataFrame, prep: Prepared, columns: np.ndarray, new_rows: bool = False
) -> tuple[list[str | None], list[str | None]]:
    """Per row of ``df`` (prepared as ``prep``): the rule that its input column ``columns[i]``
    breaks, in words, and the first identity the row breaks (None: none).  The second is for a
    row whose named cell breaks no rule itself (a VAT of 0, which an identity in logs cannot read)
    while its other cells do (the net that the gross in euros and the VAT's rate would give).
    ``new_rows``: the rows are not the ones the model was fitted on (read against the walls as
    :meth:`nrad.cells.Walls.for_new_rows` moves them)."""
    rules = _Rules(model, prep, new_rows)
    own: list[str | None] = []
    for i, c in enumerate(np.asarray(columns, dtype=np.int64)):
        raw = df[model.schema.columns[c].name].iloc[i]
        own.append(rules.numeric(i, int(c)) or rules.categorical(i, int(c), raw))
    return own, [rules.any_identity(i) for i in range(len(own))]


class _Rules:
    """The rules each row breaks, found once for all rows, and put in words row by row."""

    def __init__(self, model: TableModel, prep: Prepared, new_rows: bool) -> None:
        schema = model.schema
        self.model, self.codes = model, prep.codes
        self.values = model.raw_values(prep)
        self.n_cat = len(schema.categorical_names)
        self.numeric_of: dict[int, list[int]] = {}
        for j, c in enumerate(schema.numeric_sources):
            self.numeric_of.setdefault(c, []).append(j)
        self.categorical_of: dict[int, list[int]] = {}
        for f, c in enumerate(schema.categorical_sources):
            self.categorical_of.setdefault(c, []).append(f)
        # A number's indicator (at its spike, or not) is a code feature a dependency may bind.
        self.indicator_of = {
            schema.numeric_sources[j]: (self.n_cat + k, j) for k, j in enumerate(model.indicator_features)
        }
        # Each rule's breaks for all rows at once, as the p-values read them; rows are put in
        # words one by one from these.
        walls = self.walls = model.walls_for(new_rows)
        self.sides = None if walls is None else walls.sides(self.values)
        self.off = None if walls is None else walls.off_lattice(self.values)
        self.pair_sides = None if walls is None else walls.pair_sides(self.values)
        ident = model.identities
        self.identities = ident if ident is not None and ident.n_identities else None
        if self.identities is not None:
            codes = self.codes[:, : self.n_cat]
            self.breaking, self.distance = self.identities.breaking(self.values, codes)
            self.blamed, self.level_blamed = self.identities.broken(self.values, codes, self.distance)
            self.involved = np.array([self.identities.involved(k) for k in range(ident.n_identities)])
        self.breaks: list[tuple[Dependency, np.ndarray]] = (
            dependency_breaks(model.dependencies(new_rows), self.codes) if self.codes.shape[1] else []
        )

    def numeric(self, i: int, c: int) -> str | None:
        """The rule a numeric cell of input column ``c`` breaks in row ``i``, in words."""
        for j in self.numeric_of.get(c, []):
            text = (
                self._wall(i, j) or self._off_lattice(i, j) or self._pair_wall(i, j) or self._identity(i, j)
            )
            if text:
                return text
        if c in self.indicator_of:
            f, j = self.indicator_of[c]
            return self._dependency(i, f, value=self.values[i, j])
        return None

    def categorical(self, i: int, c: int, raw: Any) -> str | None:
        """The rule a category of input column ``c`` breaks in row ``i``, in words."""
        for f in self.categorical_of.get(c, []):
            text = self._level_identity(i, f, raw) or self._dependency(i, f, raw)
            if text:
                return text
        return None

    def _name(self, j: int) -> str:
        return self.model.schema.numeric_names[j]

    def _wall(self, i: int, j: int) -> str | None:
        walls = self.walls
        if walls is None or self.sides is None or not self.sides[i, j]:
            return None
        side, bound = ("below", walls.low[j]) if self.sides[i, j] < 0 else ("above", walls.high[j])
        value = number(self.values[i, j])
        return f"{self._name(j)} {value} ({side} {number(bound)}, where this column's values stop)"

    def _off_lattice(self, i: int, j: int) -> str | None:
        walls = self.walls
        if walls is None or self.off is None or not self.off[i, j]:
            return None
        if walls.clock is not None and walls.clock[j]:
            value = number(self.values[i, j])
            return f"{self._name(j)} {value} (no time of day: this column writes times HHMM, 0 to 2400)"
        step, base = 2.0 * float(walls.half_step[j]), float(walls.lattice_base[j])  # type: ignore[index]
        # The values in the table's units carry rounding of their transforms (2.0000000000000004):
        # read with the lattice's own tolerance.
        whole = not off_lattice(np.array([step, base]), 0.0, 1.0).any() and round(step) == 1
        steps = "are whole numbers" if whole else f"come in steps of {number(step)}"
        return f"{self._name(j)} {number(self.values[i, j])} (this column's values {steps})"

    def _pair_wall(self, i: int, j: int) -> str | None:
        walls = self.walls
        if walls is None or walls.pairs is None or self.pair_sides is None:
            return None
        assert walls.pair_low is not None and walls.pair_high is not None
        for k in np.flatnonzero((walls.pairs == j).any(axis=1) & (self.pair_sides[i] != 0)):
            a, b = (int(v) for v in walls.pairs[k])
            if self.pair_sides[i, k] < 0:
                bound, side = float(walls.pair_low[k]), "at least"
            else:
                bound, side = float(walls.pair_high[k]), "at most"
            other = b if j == a else a
            offset = "" if bound == 0 else f" + {number(bound)}" if bound > 0 else f" - {number(-bound)}"
            return (f"{self._name(j)} {number(self.values[i, j])} with {self._name(other)} "
                    f"{number(self.values[i, other])} (in the training rows {self._name(a)} is {side} "
                    f"{self._name(b)}{offset})")  # fmt: skip
        return None

    def _where(self, k: int) -> str:
        """``" of hotel 'Airport'"`` for an identity within a level ("" over all rows)."""
        ident = self.identities
        assert ident is not None
        f = int(ident.feature[k])
        if f < 0:
            return ""
        return f" of {self.model.schema.categorical_names[f]} {label(self.model, f, int(ident.level[k]))}"

    def _identity(self, i: int, j: int) -> str | None:
        ident = self.identities
        # Not only the cells the identity blames: a broken relation's cells are named by how odd
        # each is in its context (nrad.evidence), and the one named is explained by the relation.
        if ident is None or not self.blamed[i].any():
            return None
        broken = np.flatnonzero(self.breaking[i] & self.involved[:, j])
        if not len(broken):
            return None
        # The identity that gives this cell, else one it is a term of.
        k = int(next((k for k in broken if ident.response[k] == j), broken[0]))
        a = int(ident.response[k])
        names = self.model.schema.numeric_names
        formula = ident.formula(k, names, short)
        given = float(ident.predicted(k, self.values[i : i + 1])[0])
        kept = f"the training rows{self._where(k)} keep {formula} to rounding"
        if a == j:
            return f"{names[j]} {number(self.values[i, j])} ({kept}: {short(given)} here)"
        return (f"{names[j]} {number(self.values[i, j])} ({kept}; here {names[a]} is "
                f"{number(self.values[i, a])} and the relation gives {short(given)})")  # fmt: skip

    def any_identity(self, i: int) -> str | None:
        """The first identity row ``i`` breaks, in words (None: none)."""
        ident = self.identities
        if ident is None or not (self.blamed[i].any() or self.level_blamed[i].any()):
            return None
        # A level blamed (a pound bill at the euro's rate) says most: it names the right relation.
        for f in np.flatnonzero(self.level_blamed[i]):
            text = self._level_identity(i, int(f), None)
            if text:
                return text
        breaking = np.flatnonzero(self.breaking[i])
        if not len(breaking):
            return None
        k = int(breaking[0])
        a = int(ident.response[k])
        given = float(ident.predicted(k, self.values[i : i + 1])[0])
        names = self.model.schema.numeric_names
        return (f"the training rows{self._where(k)} keep {ident.formula(k, names, short)} to rounding "
                f"({names[a]} {number(self.values[i, a])} here, where it gives {short(given)})")  # fmt: skip

    def _level_identity(self, i: int, f: int, raw: Any) -> str | None:
        ident = self.identities
        if ident is None or f >= self.n_cat or not self.level_blamed[i, f]:
            return None
        code = int(self.codes[i, f])
        for k in np.flatnonzero((ident.feature == f) & (ident.level == code) & self.breaking[i]):
            same = (ident.feature == f) & (ident.response == ident.response[k]) & (ident.level != code)
            kept = [m for m in np.flatnonzero(same) if self.distance[i, m] <= 1.0]
            if not kept:
                continue
            m = int(kept[0])
            names = self.model.schema.numeric_names
            column = self.model.schema.categorical_names[f]
            return (f"{column} {label(self.model, f, code, raw)} (this row's numbers keep "
                    f"{ident.formula(m, names, short)}, the relation of {column} "
                    f"{label(self.model, f, int(ident.level[m]))}; rows of {label(self.model, f, code, raw)} "
                    f"keep {ident.formula(int(k), names, short)})")  # fmt: skip
        return None

    def _dependency(self, i: int, f: int, raw: Any = None, value: float | None = None) -> str | None:
        """The dependency code feature ``f`` of row ``i`` breaks, in words (``value``: the number of
        an indicator feature's cell)."""
        for dependency, broken in self.breaks:
            if dependency.value != f or not broken[i]:
                continue
            key = int(self.codes[i, dependency.key])
            indicator = f >= self.n_cat
            level = feature_level if indicator else label  # "tip_amount 0"; a category's "'cash'"
            allowed = [level(self.model, f, int(v)) for v in dependency.allowed[key].indices]
            listed = allowed[:LISTED_LEVELS]
            if len(allowed) > LISTED_LEVELS:
                listed.append(f"{len(allowed) - LISTED_LEVELS} others")
            goes_with = listed[0] if len(listed) == 1 else f"{', '.join(listed[:-1])} or {listed[-1]}"
            names = self.model.schema.categorical_names
            if indicator:
                j = self.model.indicator_features[f - self.n_cat]
                cell = f"{self.model.schema.numeric_names[j]} {number(value)}"
            else:
                cell = f"{names[f]} {label(self.model, f, int(self.codes[i, f]), raw)}"
            given = feature_level(self.model, dependency.key, key)
            return f"{cell} (in the training rows {given} goes with {goes_with})"
        return None

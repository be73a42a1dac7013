"""How a value, a derived number and a category level are written for a person reading a reason."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from nrad.preprocess import MISSING, OTHER, WEEKDAYS

if TYPE_CHECKING:
    from nrad.table import TableModel


def label(model: TableModel, f: int, code: int, raw: Any = None) -> str:
    """Code ``code`` of categorical feature ``f``: ``'M07'``, ``missing``, ``on Sun``; a rare level
    pooled as "other" is written as the row's own value ``raw`` when given."""
    labels = model.schema.categorical_labels[f]
    text = labels[code] if code < len(labels) else "?"
    if text in (OTHER,) and raw is not None and not pd.isna(raw):
        return repr(str(raw))
    if text == MISSING:
        return "missing"
    if text in WEEKDAYS:
        return f"on {text}"
    return repr(text)


def short(value: float) -> str:
    """A derived value (a typical range, a repair) to the precision a reader needs: 34.5, 1.06, 2101."""
    v = float(value)
    if not np.isfinite(v):
        return str(v)
    return f"{v:.0f}" if 100 <= abs(v) < 1e7 else f"{v:.3g}"


def number(value: Any) -> str:
    """A value as the table holds it, to four significant digits (three from a million on)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return repr(value)
    if not np.isfinite(v):
        return str(v)
    return f"{v:.4g}" if abs(v) < 1e6 else f"{v:.3g}"


def feature_level(model: TableModel, f: int, code: int) -> str:
    """A code feature's level in words: ``"MS.Zoning 'RL'"``, or a number's indicator (``"Pool.Area
    0"``, ``"Lot.Frontage missing"``): the Chow-Liu forest links categories and indicators alike."""
    schema = model.schema
    n_cat = len(schema.categorical_names)
    if f < n_cat:
        return f"{schema.categorical_names[f]} {label(model, f, code)}"
    k = f - n_cat
    name = schema.numeric_names[model.indicator_features[k]]
    if code == model.categories.n_codes[f] - 1:
        return f"{name} missing"
    spike = schema.columns[schema.numeric_sources[model.indicator_features[k]]].spike
    if spike is None:
        return f"{name} present"
    return f"{name} {spike:g}" if code == 1 else f"{name} not {spike:g}"

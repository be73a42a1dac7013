"""``--params`` / ``--variant`` of the fit benchmarks: NRDE keyword arguments from text."""

from __future__ import annotations

import ast
from typing import Any


def parse_params(text: str | None) -> dict[str, Any]:
    """``"batch_size=512,penalty_weight=0.5"`` -> keyword arguments; ``None``, ``""``, ``"default"``: none."""
    if not text or text == "default":
        return {}
    pairs = (item.split("=", 1) for item in text.split(","))
    return {key.strip(): ast.literal_eval(value.strip()) for key, value in pairs}

"""nrad: noise-robust anomaly detection for tables.

``nrad.NRDE``: the detector for numeric arrays, a scikit-learn estimator
(``decision_function`` negative for outliers, ``predict`` +1 / -1).
``nrad.fit_table``: the model of a whole table (numbers, categories, dates,
missing cells) that the command line uses, with p-values and explanations.
``nrad.TableDetector``: that model as a scikit-learn estimator (DataFrames or
arrays; ``fit_predict(table)`` is ``nrad detect``'s flags).
``nrad.pyod.NRDE``: the detector with PyOD's conventions (higher = more
anomalous, labels 0 / 1).
"""

from typing import Any as _Any

__version__ = "0.1.0"

__all__ = ["NRDE", "TableDetector", "fit_table", "__version__"]


def __getattr__(name: str) -> _Any:
    # NRDE and fit_table (and with them torch, slow to import) are imported on first
    # use, so that ``nrad --help`` and the light commands start at once.
    if name == "NRDE":
        from nrad.nrde import NRDE

        return NRDE
    if name == "TableDetector":
        from nrad.estimator import TableDetector

        return TableDetector
    if name == "fit_table":
        from nrad.table import fit_table

        return fit_table
    raise AttributeError(f"module 'nrad' has no attribute {name!r}")


def __dir__() -> list[str]:
    # The lazy names above, for tab completion and dir(nrad).
    return sorted({*(name for name in globals() if not name.startswith("_")), *__all__})

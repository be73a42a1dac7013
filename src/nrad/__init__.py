"""nrad: noise-robust anomaly detection for tables."""

from typing import Any

__version__ = "0.1.0"

__all__ = ["NRDE", "__version__"]


def __getattr__(name: str) -> Any:
    # NRDE (and with it torch, ~1.5 s) is imported on first use, so that
    # ``nrad --help`` and the light commands start at once.
    if name == "NRDE":
        from nrad.detector import NRDE

        return NRDE
    raise AttributeError(f"module 'nrad' has no attribute {name!r}")

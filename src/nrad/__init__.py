"""nrad: noise-robust anomaly detection for tables."""

from nrad.detector import NRDE

__version__ = "0.1.0"

__all__ = ["NRDE", "__version__"]

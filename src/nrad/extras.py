"""Optional parts of nrad and the extra that installs each.

``pip install nrad`` gives the detector, the table model and the command
line.  The HTML report, Dask scoring, the benchmark's baselines and the PyOD
drop-in need more, installed with an extra (``pip install 'nrad[report]'``);
a missing one is an error that names it, not an ImportError from deep inside.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from nrad.errors import NradError

#: What each extra is for (said in the error).
EXTRAS = {
    "report": "the HTML report (--report)",
    "dask": "scoring on Dask (--engine dask)",
    "bench": "the benchmark's baseline detectors and figures (nrad bench)",
    "pyod": "the PyOD drop-in (nrad.pyod)",
}


def require(module: str, extra: str) -> ModuleType:
    """Import ``module``, or raise :class:`NradError` naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        package = module.split(".")[0]
        raise NradError(
            f"{EXTRAS[extra]} needs {package}, which is not installed: pip install 'nrad[{extra}]'"
        ) from exc

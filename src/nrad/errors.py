"""The one error base class the command line catches at its boundary."""

from __future__ import annotations


class NradError(Exception):
    """Base class of every error nrad raises on purpose (bad input, bad file...)."""


class FitDivergedError(NradError, RuntimeError):
    """Training produced non-finite values even after learning-rate retries."""

"""Shared fixtures: every test seeds locally, none leaks global RNG state."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch


@pytest.fixture(autouse=True)
def _fork_torch_rng() -> Iterator[None]:
    with torch.random.fork_rng():
        torch.manual_seed(0)
        yield

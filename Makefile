# Two commands a new user needs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# torch first and pinned.  On Linux, PyPI's torch is a multi-GB CUDA build: where pip has no CPU build
# of it at hand, give its CPU wheel index, e.g. make test TORCH_INDEX=https://download.pytorch.org/whl/cpu
TORCH := torch==2.13.0
TORCH_INDEX ?=
TORCH_FROM := $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX),)

.PHONY: demo test test-quick bench-speed clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Exact versions from constraints.txt (pyproject.toml declares ranges); torch first.
$(VENV)/.installed: pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/pip install --quiet -c constraints.txt $(TORCH_FROM) $(TORCH)
	$(BIN)/pip install --quiet -c constraints.txt -e ".[test]" $(TORCH)
	touch $@

demo: $(VENV)/.installed
	$(BIN)/nrad demo

# Both cores (pytest-xdist, a test file per worker); test-quick leaves out the tests marked slow.
test: $(VENV)/.installed
	$(BIN)/python -m pytest -n 2 --dist loadfile

test-quick: $(VENV)/.installed
	$(BIN)/python -m pytest -n 2 --dist loadfile -m "not slow"

# DATA: a folder of ADBench .npz files (X, y), e.g. from `nrad datasets fetch --to data/adbench`.
DATA ?= data/adbench

bench-speed: $(VENV)/.installed
	$(BIN)/python benchmarks/fit_speed.py --data-dir $(DATA)

clean:
	rm -rf $(VENV) build *.egg-info

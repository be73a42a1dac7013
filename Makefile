# Two commands a new user needs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# torch first and pinned: the CPU build of 2.13.0 is what pip finds here;
# anything else pulls a multi-GB CUDA build.
TORCH := torch==2.13.0

.PHONY: demo test bench-speed clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Exact versions from constraints.txt (pyproject.toml declares ranges); torch first.
$(VENV)/.installed: pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/pip install --quiet -c constraints.txt $(TORCH)
	$(BIN)/pip install --quiet -c constraints.txt -e ".[test]" $(TORCH)
	touch $@

demo: $(VENV)/.installed
	$(BIN)/nrad demo

test: $(VENV)/.installed
	$(BIN)/python -m pytest

# DATA: a folder of ADBench .npz files (X, y), e.g. from `nrad datasets fetch --to data/adbench`.
DATA ?= data/adbench

bench-speed: $(VENV)/.installed
	$(BIN)/python benchmarks/fit_speed.py --data-dir $(DATA)

clean:
	rm -rf $(VENV) build *.egg-info

# attnviz: `make run` starts the app, `make test` runs every test. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# A CPU or CUDA torch already in the venv is kept. Otherwise this one is installed first
# (on this project's machines a CPU build lies on disk; elsewhere pip fetches the usual one).
TORCH ?= torch==2.13.0
PORT ?= 8501

.PHONY: setup run test test-fast bench load lint clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e ".[test]"
	touch $@

run: setup
	$(VENV)/bin/streamlit run app.py --server.port $(PORT)

test: setup
	$(PY) -m pytest -q -ra

test-fast: setup
	$(PY) -m pytest -q -ra -m "not e2e and not slow"

bench: setup
	$(PY) -m benchmarks $(BENCH)

# A class of 30; eight long pastes (memory); a light session beside three heavy links.
load: setup
	$(PY) tests/load/run_load.py
	$(PY) tests/load/memory.py
	$(PY) tests/load/heavy.py

lint: setup
	$(VENV)/bin/ruff check attnviz pages tests app.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info

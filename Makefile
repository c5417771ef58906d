# attnviz: `make run` starts the app, `make test` runs every test. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# A CPU or CUDA torch already in the venv is kept. Otherwise this one is installed first
# (on this project's machines a CPU build lies on disk; elsewhere pip fetches the usual one).
TORCH ?= torch==2.13.0
PORT ?= 8501
# make serve: Streamlit processes behind nginx. make load: concurrent sessions, and a running
# server to load (e.g. URL=http://127.0.0.1:8501); no URL: the tool starts its own process.
# LECTURE=K: the class follows the teacher (each student types one of K sentences; 1: all
# "I saw a saw") instead of every student typing a sentence of their own.
WORKERS ?= 2
SESSIONS ?= 30
URL ?=
LECTURE ?=

.PHONY: setup run serve stop test test-fast bench load lint screenshots clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e ".[test]"
	touch $@

# `streamlit run app.py` that loads the model while the server starts (scripts/run_app.py).
run: setup
	$(PY) scripts/run_app.py app.py --server.port $(PORT)

# A lecture hall: WORKERS processes behind nginx (Debian's package, installed when missing)
# with cookie session affinity, at http://127.0.0.1:$(PORT). Ctrl-C or `make stop` ends all.
serve: setup
	$(PY) scripts/serve.py --workers $(WORKERS) --port $(PORT) $(if $(ADDRESS),--address $(ADDRESS))

stop:
	$(PYTHON) scripts/serve.py --stop --port $(PORT)

test: setup
	$(PY) -m pytest -q -ra

test-fast: setup
	$(PY) -m pytest -q -ra -m "not e2e and not slow"

bench: setup
	$(PY) -m benchmarks $(BENCH)

# A class (SESSIONS, default 30); then eight long pastes (memory) and a light session beside
# three heavy links. With URL=..., only the class, against that running server.
load: setup
	$(PY) tests/load/run_load.py --sessions $(SESSIONS) $(if $(strip $(LECTURE)),--lecture $(strip $(LECTURE))) $(if $(strip $(URL)),--url $(strip $(URL)))
	$(if $(strip $(URL)),,$(PY) tests/load/memory.py)
	$(if $(strip $(URL)),,$(PY) tests/load/heavy.py)

# Every page at 390x844 (a phone), 1280x720 (a laptop, a projector) and 1400x1000, light and dark, English and
# Chinese, with one contact sheet per size: $(SHOTS)/sheets/*.png (scripts/screenshots.py).
SHOTS ?= /tmp/attnviz-screenshots
screenshots: setup
	$(PY) scripts/screenshots.py --matrix --out $(SHOTS)

lint: setup
	$(VENV)/bin/ruff check attnviz pages tests app.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info

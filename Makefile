# make demo: set up and serve the app with demo projects (SQLite, nothing else needed)
# make test: set up and run every test
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
export PORT

.PHONY: install runtime demo test lint browser wordnet clean

# What the app runs on (make demo), and that plus the development tools (make test): pytest, Playwright,
# schemathesis, moto, the reference implementations the tests compare against, ruff, mypy, import-linter.
runtime: $(VENV)/.runtime
install: $(VENV)/.installed

$(VENV)/.runtime: pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "Python 3.11 is needed (set PYTHON=...)"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# The CPU build of torch first, from this machine's local disk, so pip never pulls a multi-GB CUDA build.
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[ml]'
	touch $@

$(VENV)/.installed: $(VENV)/.runtime
	$(PY) -m pip install --quiet -e '.[ml,dev]'
	touch $@

wordnet: runtime
	@if [ -x models_backend/wordnet_install.sh ]; then models_backend/wordnet_install.sh; fi

# Debian's chromium drives the browser tests (Playwright downloads no browser here).
browser:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# The demo asks for DEBUG (development key, cookies over plain HTTP); bin/serve alone runs with it off.
demo: runtime wordnet
	DEBUG=$${DEBUG:-true} PY=$(PY) bin/serve

test: install wordnet browser lint
	PY=$(PY) bin/test-passes

# Lint, format and types (ruff and mypy, pinned, rules in pyproject.toml), and the apps' dependencies
# pointing one way (import-linter contracts in pyproject.toml).
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) var

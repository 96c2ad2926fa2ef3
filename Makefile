# Two commands do all the set-up on a fresh machine:
#   make run    install what running needs and start mitmdump with the addon
#   make test   install the test tools too and run the whole test suite
#
# make run: a reverse proxy to UPSTREAM on HOST:PORT (127.0.0.1:8080), so that
#   ANTHROPIC_BASE_URL=http://127.0.0.1:8080 claude   works as it is.
#   make run UPSTREAM=https://api.openai.com            OpenAI instead
#   make run MODE=regular                               a regular (HTTPS_PROXY) proxy
#   make run ARGS="--set disguise_mappings=~/my.yaml"   anything else for mitmdump
# PY picks the interpreter (mitmproxy 11 on Python 3.11, 12 on 3.12). A name that is not
# on PATH is looked up in pyenv's versions (`make test PY=python3.12` works where pyenv
# has 3.12 without it being activated). VENV defaults to .venv for 3.11, .venvXY else.
PY ?= python3
ARGS ?=
HOST ?= 127.0.0.1
PORT ?= 8080
UPSTREAM ?= https://api.anthropic.com
MODE ?= reverse:$(UPSTREAM)

# (A pyenv shim is on PATH but fails when its version is not active: run it to be sure.)
PYTHON := $(shell p='$(PY)'; \
	if "$$p" -c '' >/dev/null 2>&1; then "$$p" -c 'import sys; print(sys.executable)'; \
	elif command -v pyenv >/dev/null 2>&1; then \
	  ls -d "$$(pyenv root)"/versions/*/bin/"$$p" 2>/dev/null | sort -V | tail -n 1; \
	fi)
ifeq ($(PYTHON),)
$(error no interpreter '$(PY)' on PATH or in pyenv's versions)
endif
PYVER := $(shell '$(PYTHON)' -c 'import sys; print("%d%d" % sys.version_info[:2])')
VENV ?= .venv$(if $(filter 311,$(PYVER)),,$(PYVER))

# Options the user gives in ARGS are not given twice (mitmdump would start a second
# proxy for a second --mode).
RUN_OPTS := $(if $(findstring --mode,$(ARGS)),,--mode $(MODE)) \
	$(if $(findstring --listen-host,$(ARGS)),,--listen-host $(HOST)) \
	$(if $(findstring --listen-port,$(ARGS)),,--listen-port $(PORT))

# pip's progress, one line per package it fetches (without -q it prints several lines a
# package; with -q nothing for a minute or two).
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
PIP_PROGRESS := awk '/^Collecting /{print "  collecting " $$2; fflush()} /^(Successfully installed|ERROR)/{print; fflush()}'

$(VENV)/bin/python:
	@echo "== creating $(VENV) with $(PYTHON)"
	'$(PYTHON)' -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip

$(VENV)/.installed-run: pyproject.toml | $(VENV)/bin/python
	@echo "== installing disguise and mitmproxy into $(VENV) (a minute or two the first time)"
	$(VENV)/bin/python -m pip install --progress-bar off -e . | $(PIP_PROGRESS)
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(VENV)/bin/python
	@echo "== installing disguise, mitmproxy and the test tools into $(VENV) (a few minutes the first time)"
	$(VENV)/bin/python -m pip install --progress-bar off -e ".[test]" | $(PIP_PROGRESS)
	touch $@ $(VENV)/.installed-run

# The compiled engine (setup.py, docs/engine.md), built again in place only when the
# checkout's build is not usable (an engine source changed since: it would otherwise run
# as Python, engine.py says so). pip install -e built it the first time: on a fresh clone
# it is not compiled a second time (build_ext would, its build/ folder being empty: half
# a minute of the CPU). A build that fails leaves the Python engine.
ENGINE_BUILD = env -u DISGUISE_ENGINE PYTHONPATH=addon $(VENV)/bin/python -c 'import disguiselib.engine as e; raise SystemExit(e.NAME != "compiled")' \
	2>/dev/null || { $(VENV)/bin/python setup.py -q build_ext --inplace 2>&1 | grep -E '^disguise:' || true; }

# The streaming and masking property tests, again with the Python engine (the reference;
# `make test` runs the compiled one where it is built). .ci/run runs both.
PROPERTY_TESTS = tests/base/test_holdback.py tests/rules/test_restorer.py tests/wire/test_sse.py \
	tests/wire/test_jsonspan.py tests/apis/anthropic/test_messages_stream.py tests/apis/openai/test_chat.py \
	tests/apis/openai/test_responses.py tests/base/test_fastpath.py tests/base/test_fastpath_raw.py \
	tests/base/test_masking_scan.py tests/base/test_stream.py tests/base/test_readpass.py tests/wire/test_tokenmap.py \
	tests/inspect/test_tee.py tests/wire/test_percent.py tests/rules/test_rawscan.py

.PHONY: install run test-setup test test-python-engine bench mutation
install: $(VENV)/.installed-run

run: $(VENV)/.installed-run
	$(VENV)/bin/mitmdump $(RUN_OPTS) -s addon/disguise.py $(ARGS)

# make test's set-up alone: the venv with the test tools, the engine built where needed
# (.ci/run sets up first, then runs several test processes at once in one checkout)
test-setup: $(VENV)/.installed-test
	@$(ENGINE_BUILD)

test: test-setup
	$(VENV)/bin/python -m pytest --durations=25 $(ARGS)

test-python-engine: $(VENV)/.installed-test
	DISGUISE_ENGINE=python HYPOTHESIS_PROFILE=reference DISGUISE_EXAMPLES=$${DISGUISE_EXAMPLES:-0.5} $(VENV)/bin/python -m pytest -q -p no:cacheprovider $(PROPERTY_TESTS) $(ARGS)

bench: $(VENV)/.installed-test
	@$(ENGINE_BUILD)
	$(VENV)/bin/python bench/bench.py $(ARGS)

# Mutation testing of the core (mutation/run.py): every module in turn, or ARGS="sse rules".
# Long (tens of minutes a module on two busy cores); runs at nice 19, one mutant at a time.
$(VENV)/.installed-mutation: pyproject.toml $(VENV)/.installed-test
	$(VENV)/bin/python -m pip install -q -e ".[test,mutation]"
	touch $@

mutation: $(VENV)/.installed-mutation
	$(VENV)/bin/python mutation/run.py $(ARGS)

# Two commands do all the set-up on a fresh machine:
#   make run    install what is needed and run the addon (mitmdump) on mappings/
#   make test   install what is needed and run the whole test suite
# PY picks the interpreter (mitmproxy 11 on Python 3.11, 12 on 3.12); VENV its venv.
PY ?= python3
VENV ?= .venv
ARGS ?=

$(VENV)/.installed: pyproject.toml
	test -x $(VENV)/bin/python || $(PY) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q -e ".[test]"
	touch $@

.PHONY: install run test bench
install: $(VENV)/.installed

run: $(VENV)/.installed
	$(VENV)/bin/mitmdump -s addon/disguise.py --set disguise_mappings=mappings $(ARGS)

test: $(VENV)/.installed
	$(VENV)/bin/python -m pytest $(ARGS)

bench: $(VENV)/.installed
	$(VENV)/bin/python bench/bench.py $(ARGS)

# ovn-controller-py: setup, tests, demo, benchmarks.
# Run as root on Debian 12: `make demo`, `make test`. See README.md.

SHELL := /bin/bash
.DEFAULT_GOAL := help
# ovs-vswitchd lives in /usr/sbin; make sure it is found even with a user PATH.
export PATH := $(PATH):/usr/local/sbin:/usr/sbin:/sbin

VENV       := .venv
PY         := $(VENV)/bin/python
SYSPY      := /usr/bin/python3
APT_PKGS   := openvswitch-switch ovn-central ovn-host python3-openvswitch python3-venv
DEPS_STAMP := $(VENV)/.deps-installed
BENCH_STAMP := $(VENV)/.bench-installed
REQS       := requirements/runtime.txt requirements/os-ken.txt requirements/dev.txt pyproject.toml

# Lint/type-check/test only what git tracks, so that another engineer's
# uncommitted work in a shared tree cannot turn `make test` red. Outside a
# git checkout, fall back to the directories.
GIT_FILES   = $(wildcard $(shell git ls-files -- $(1) 2>/dev/null))
PY_FILES    = $(or $(call GIT_FILES,'*.py'),controller ofctrl physical integration tests benchmarks)
# mypy checks the product code; test modules (tests/, integration/test_*.py,
# conftest.py) are exercised by pytest and linted by ruff.
PKG_FILES   = $(or $(filter-out %/conftest.py integration/test_%,$(call GIT_FILES,'controller/*.py' 'ofctrl/*.py' 'physical/*.py' 'integration/*.py')),controller ofctrl physical integration)
TEST_FILES  = $(call GIT_FILES,'tests/*test_*.py' 'integration/*test_*.py')
PYTEST_ARGS ?=

.PHONY: help setup system-deps lint typecheck test demo bench scale clean distclean

help:
	@echo "make setup    install Debian packages (if missing) and .venv (idempotent)"
	@echo "make test     ruff + mypy + pytest (unit and integration tests)"
	@echo "make demo     sandbox with OVN + our agent on a small topology"
	@echo "make bench    benchmarks (benchmarks/__main__.py)"
	@echo "make scale    N chassis on a RAFT SB + relays, ours vs C (SCALE_N='10 30', SCALE_AGENT=ours|c|both)"
	@echo "make lint     ruff + mypy only"
	@echo "make clean    caches and build output (distclean also removes .venv)"

setup: system-deps $(DEPS_STAMP)

# Debian packages: OVS 3.1 / OVN 23.03.1 daemons and tools, python3-openvswitch
# (the `ovs` module with its C JSON parser), python3-venv.
system-deps:
	@missing=""; \
	for b in ovs-vswitchd ovsdb-server ovn-northd ovn-controller; do \
	  command -v $$b >/dev/null 2>&1 || missing="$$missing $$b"; done; \
	for p in python3-openvswitch python3-venv; do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" \
	    || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "setup: missing:$$missing -> apt-get install $(APT_PKGS)"; \
	  made_policy=0; \
	  if [ ! -e /usr/sbin/policy-rc.d ]; then \
	    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && made_policy=1; \
	  fi; \
	  rc=0; \
	  { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $(APT_PKGS); } || rc=$$?; \
	  [ $$made_policy = 1 ] && rm -f /usr/sbin/policy-rc.d; \
	  exit $$rc; \
	fi

$(PY): | system-deps
	$(SYSPY) -m venv --system-site-packages $(VENV)

# Order matters: runtime deps, os-ken WITHOUT its deps (they pull eventlet),
# dev tools, then this project itself without deps (pip must not pull `ovs`
# from PyPI: the pure-Python build would shadow Debian's C-accelerated one).
$(DEPS_STAMP): $(REQS) | $(PY)
	$(PY) -m pip install -q -r requirements/runtime.txt
	$(PY) -m pip install -q --no-deps -r requirements/os-ken.txt
	$(PY) -m pip install -q -r requirements/dev.txt
	$(PY) -m pip install -q --no-deps -e .
	@$(PY) -c 'import importlib.util as u, sys; \
	  sys.exit("setup: eventlet is importable in .venv; remove it (see README)" if u.find_spec("eventlet") else 0)'
	@$(PY) -c 'import ovs.json, sys; \
	  sys.exit(0 if ovs.json.PARSER == "C" else "setup: ovs.json.PARSER is not C: a pip-installed ovs shadows python3-openvswitch?")'
	@touch $@

lint: setup
	@echo "ruff check: $(words $(PY_FILES)) paths"
	@$(PY) -m ruff check $(PY_FILES)
	@echo "mypy: $(words $(PKG_FILES)) paths"
	@$(PY) -m mypy $(PKG_FILES)

typecheck: setup
	@$(PY) -m mypy $(PKG_FILES)

test: lint
	@echo "pytest: $(words $(TEST_FILES)) test files"
	@$(PY) -m pytest -q $(TEST_FILES) $(PYTEST_ARGS)

demo: setup
	$(PY) -m integration.demo

$(BENCH_STAMP): requirements/bench.txt | $(DEPS_STAMP)
	$(PY) -m pip install -q -r requirements/bench.txt
	@touch $@

bench: setup $(BENCH_STAMP)
	@if [ -f benchmarks/__main__.py ]; then \
	  $(PY) -m benchmarks $(BENCH_ARGS); \
	else \
	  echo "bench: no benchmarks/__main__.py yet (nothing to run)"; \
	fi

SCALE_N     ?= 5
SCALE_AGENT ?= both
scale: setup $(BENCH_STAMP)
	$(PY) -m integration.scale -n "$(SCALE_N)" --agent $(SCALE_AGENT) $(SCALE_ARGS)

clean:
	rm -rf .mypy_cache .ruff_cache .pytest_cache .hypothesis build *.egg-info
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)

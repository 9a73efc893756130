# Before Q, K, and V: one command to build the book, one to test it.
#   make book   set up .venv, execute every chapter once, build _build/html (zero warnings)
#   make test   set up .venv, run the unit tests and execute every chapter with nbmake
#   make bench  time every chapter (budget: 60 s each on a 2-core CPU)
#   make test-site  open every built page in headless Chromium, offline (after make book)
#   make dist   build the wheel and sdist into dist/ and check them with twine
#   make test-colab  simulate Colab: bare venv, one chapter alone, install from dist/
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
EXEC := _exec
TORCH_VERSION ?= 2.13.0
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
PIPQ := --quiet --disable-pip-version-check
JB_FLAGS ?= -W -n --keep-going
export PYTHONHASHSEED := 0
export BEFOREQKV_PROGRESS ?= 0

.PHONY: install book test unit execute site vendor test-site dist test-colab bench student strip clean help

help:
	@grep -E '^#   make' Makefile | sed 's/^#   //'

$(STAMP): pyproject.toml requirements.txt requirements-data.txt requirements-real.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "== installing into $(VENV) (torch: a CPU wheel unless one is already installed)"
	@$(BIN)/python -c "import torch" 2>/dev/null || \
	  $(BIN)/pip install $(PIPQ) --retries 0 --timeout 30 --extra-index-url $(TORCH_INDEX) "torch==$(TORCH_VERSION)" || \
	  $(BIN)/pip install $(PIPQ) "torch>=2.2"
	@$(BIN)/pip install $(PIPQ) -r requirements.txt
	@$(BIN)/pip install $(PIPQ) --no-deps --require-hashes -r requirements-data.txt -r requirements-real.txt
	@$(BIN)/python -c "import beforeqkv, torch; print('== beforeqkv', beforeqkv.__version__, '| torch', torch.__version__)"
	@touch $@

install: $(STAMP)

unit: $(STAMP)
	$(BIN)/python -m pytest tests -q -p no:cacheprovider --junitxml=_build/junit-unit.xml

# Execute every chapter exactly once (into a scratch copy, so book/ stays stripped).
# BEFOREQKV_EXPLORERS=static: each explorer draws its (bounded) grid of settings once into
# an HTML component that works on the static site; _build/explorers.jsonl logs their cost.
execute: $(STAMP)
	@rm -rf $(EXEC) && mkdir -p $(EXEC) _build && rm -f _build/explorers.jsonl
	@cp -r book _config.yml _toc.yml $(EXEC)/
	cd $(EXEC) && BEFOREQKV_EXPLORERS=static BEFOREQKV_EXPLORER_LOG=$(CURDIR)/_build/explorers.jsonl \
	  ../$(BIN)/python -m pytest --nbmake --overwrite book -q -p no:cacheprovider \
	  --durations=0 --junitxml=../_build/junit-notebooks.xml -o testpaths=book -o addopts=""

test: unit execute
	@$(BIN)/python tools/junit_summary.py _build/junit-unit.xml _build/junit-notebooks.xml

# Scripts the site serves itself (MathJax): pinned npm tarballs, integrity-checked, cached.
vendor:
	$(PYTHON) tools/vendor.py _build/vendor

# Build the site from the already executed notebooks (execution is off in _config.yml).
site: $(STAMP) vendor
	@test -d $(EXEC)/book || { echo "no executed notebooks: run 'make execute' first"; exit 1; }
	@cp _config.yml _toc.yml $(EXEC)/ && cp book/*.md book/*.bib $(EXEC)/book/
	@rm -rf $(EXEC)/book/_static $(EXEC)/_ext && cp -r book/_static $(EXEC)/book/_static && cp -r _ext $(EXEC)/_ext
	@cp -r _build/vendor/mathjax $(EXEC)/book/_static/mathjax
	@rm -rf _build/html
	$(BIN)/jupyter-book build $(EXEC) --path-output . $(JB_FLAGS)
	@echo "== the book is at $(CURDIR)/_build/html/index.html ($$(du -sh _build/html | cut -f1))"

# The built site in headless Chromium with every host but 127.0.0.1 unresolvable;
# screenshots (1280 and 390 px wide) go to _build/screenshots/.
test-site: $(STAMP)
	$(BIN)/python -m pytest tests/test_site.py tests/test_browser.py -q -p no:cacheprovider \
	  --require-site --junitxml=_build/junit-site.xml

# Wheel + sdist for PyPI, built and checked in a throwaway venv (not .venv).
dist:
	@rm -rf _build/pkgvenv dist/*.whl dist/*.tar.gz
	$(PYTHON) -m venv _build/pkgvenv
	_build/pkgvenv/bin/pip install $(PIPQ) build twine
	_build/pkgvenv/bin/python -m build --outdir dist .
	_build/pkgvenv/bin/twine check --strict dist/*.whl dist/*.tar.gz

# Colab, simulated: a bare venv (torch, numpy, matplotlib, ipywidgets), one chapter alone in
# an empty folder, its hidden bootstrap cell installing beforeqkv from dist/ (--find-links).
test-colab: $(STAMP) dist
	TORCH_INDEX=$(TORCH_INDEX) TORCH_VERSION=$(TORCH_VERSION) \
	  $(BIN)/python -m pytest tests/test_colab.py -q -p no:cacheprovider --run-colab \
	  --junitxml=_build/junit-colab.xml

book: execute site

bench: $(STAMP)
	$(BIN)/python tools/bench.py --budget 60 book/[0-9]*.ipynb

student: $(STAMP)
	$(BIN)/python tools/student.py book dist/student

strip: $(STAMP)
	$(BIN)/python tools/clean_nb.py book/*.ipynb

clean:
	rm -rf _build _exec dist

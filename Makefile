# ragsweep — `make help` lists every target.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
RAGSWEEP := $(VENV)/bin/ragsweep
STAMP := $(VENV)/.installed

ARMS ?= fusion
EXECUTOR ?= local
WORKERS ?= $(shell nproc)
BUDGET ?= 200
SEED ?= 20260812
# The synthetic regime (docs/synthetic.md, "Regimes"): archive (default) or easy. It is part of every
# synthetic folder's and state's name, so a corpus of one regime is never reused as the other's.
REGIME ?= archive
GROWTH_MEETINGS ?= 25,50,100,200
GROWTH_COLD_MAX ?= 100
VAR ?= var
SYNTH_FULL := $(VAR)/synthetic/full-$(REGIME)-$(SEED)
SYNTH := $(VAR)/synthetic/budget-$(BUDGET)-$(REGIME)-$(SEED)
QMSUM ?= $(VAR)/corpora/qmsum
# Where `make qmsum` (and so `make sweep`) fetches QMSum from: QMSUM_MIRROR (a folder, or an http(s):// or
# file:// base URL), else the shared mirror beside the checkout when it is there, else upstream (the
# pinned manifest's URLs). Every file is checked against the pinned sha256 on the way in.
QMSUM_MIRROR ?=
QMSUM_SHARED_MIRROR := $(abspath $(CURDIR)/../shared/data/qmsum/mirror)
QMSUM_SOURCE := $(or $(QMSUM_MIRROR),$(if $(wildcard $(QMSUM_SHARED_MIRROR)/LICENSE),$(QMSUM_SHARED_MIRROR)))
# QMSum joins the default states once fetched (its LICENSE is there). The set of corpora is part
# of a state's folder name, so fetching QMSum after a first sweep builds a new state instead of
# silently reusing the synthetic-only one (and removing it finds the old one again).
QMSUM_FLAG := $(if $(wildcard $(QMSUM)/LICENSE),--corpus qmsum=$(QMSUM))
CORPORA_TAG := $(if $(QMSUM_FLAG),-qmsum)
STATE := $(VAR)/states/default-$(BUDGET)-$(REGIME)-$(SEED)$(CORPORA_TAG)
STACK_STATE := $(VAR)/states/stack-$(BUDGET)-$(REGIME)-$(SEED)$(CORPORA_TAG)
# The embedding family compares the header with the bare chunk text, so its arms need a state holding
# both vector sets (--embedding-text both); a sweep whose ARMS name it (or all) runs on that state.
BOTH_STATE := $(STATE)-both
comma := ,
SWEEP_STATE = $(if $(filter embedding all,$(subst $(comma), ,$(ARMS))),$(BOTH_STATE),$(STATE))
# The stage-1 ablation (make ablation): QMSum alone, with the header and with the bare chunk text embedded.
QMSUM_ONLY := $(VAR)/states/qmsum-only
# The reranker every rerank arm of `make reproduction-full` uses (trained here: no package ships one).
RERANKER_DIR ?= $(VAR)/rerankers/synth-train
# The team's embedding cache (docs/embedding-cache.md, "The team's cache"): s3://BUCKET[/PREFIX] or a shared
# folder, read before anything is encoded and filled with what is; off when empty (RAGSWEEP_TEAM_CACHE unless set).
TEAM_CACHE ?=
ifneq ($(TEAM_CACHE),)
export RAGSWEEP_TEAM_CACHE := $(TEAM_CACHE)
endif
WITH_STACK_ENV := eval "$$(bash stack/env.sh)" &&

.DEFAULT_GOAL := help
.PHONY: help setup test test-all test-unit lint qmsum sweep sweep-local sweep-state sweep-backends state synth bench bench-growth bench-catalogue bench-cold scopes ablation stage4 reranker reproduction reproduction-full baselines-check reproduction-check clean

include Makefile.stack
include Makefile.k8s

help: ## list every target
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON) on PATH"; exit 2; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[eval,embed,onnx,stack,k8s,dev]'
	touch $(STAMP)

setup: $(STAMP) ## create .venv and install ragsweep with its eval, embed, onnx and dev extras

test: $(STAMP) ## the tests (stack/test.sh): the Kubernetes binaries built when missing (once per machine, 10-35 min), the suite against the local stack with the test bed's tests, the CI baseline, the single-node cluster's smoke tests (root; images built when missing)
	PY=$(PY) MAKE="$(MAKE)" bash stack/test.sh

test-all: $(STAMP) ## make test with every single-node cluster test in containers, not only the smoke scope (about 30 min more; root)
	PY=$(PY) MAKE="$(MAKE)" RAGSWEEP_CLUSTER_SCOPE=all bash stack/test.sh

test-unit: $(STAMP) ## the tests that need no service (integration tests that need one skip)
	$(PY) -m pytest -q -m "not integration"

lint: $(STAMP) ## ruff and mypy
	$(VENV)/bin/ruff check harness jobs tests benchmarks
	$(VENV)/bin/mypy

$(SYNTH_FULL)/corpus.json: | $(STAMP)
	$(RAGSWEEP) synth generate --seed $(SEED) --meetings 2000 --regime $(REGIME) --out $(SYNTH_FULL) --force

$(SYNTH)/corpus.json: $(SYNTH_FULL)/corpus.json
	$(RAGSWEEP) synth select --from $(SYNTH_FULL) --budget $(BUDGET) --out $(SYNTH) --force

synth: $(SYNTH)/corpus.json ## generate the default synthetic corpus and select the budget (BUDGET=200, REGIME=archive|easy)

# A state built before states recorded what they hold (not ragsweep.state/2, docs/states.md) is rebuilt
# here rather than refused by the sweep; --force builds beside it and swaps only on success.
OLD_STATE_SCHEMA = $(shell test -f $(1)/state.json && ! grep -q '"ragsweep.state/2"' $(1)/state.json && echo rebuild)
$(STATE)/state.json: $(SYNTH)/corpus.json $(if $(call OLD_STATE_SCHEMA,$(STATE)),rebuild-old-state)
	$(RAGSWEEP) state build --corpus synthetic=$(SYNTH) $(QMSUM_FLAG) --out $(STATE) --force

.PHONY: rebuild-old-state
rebuild-old-state:
	@echo "state: built before states recorded what they hold (docs/states.md): rebuilding it"

state: $(STATE)/state.json ## build the default corpus state (synthetic, plus QMSum when fetched into var/corpora/qmsum: a -qmsum state)

# Offline with no mirror, QMSum is not fetched: one line says why and the sweep goes on single-corpus.
# Already fetched and intact, nothing is read from anywhere.
qmsum: | $(STAMP) ## fetch QMSum into var/corpora/qmsum, sha256-checked: from QMSUM_MIRROR, else ../shared/data/qmsum/mirror, else upstream
ifneq ($(QMSUM_SOURCE),)
	$(RAGSWEEP) corpus fetch qmsum --dest $(QMSUM) --mirror $(QMSUM_SOURCE) --quiet
else
	@if $(RAGSWEEP) corpus verify qmsum --dest $(QMSUM) >/dev/null 2>&1; then echo "qmsum: $(QMSUM) verified"; \
	elif why=$$($(RAGSWEEP) corpus probe qmsum); then $(RAGSWEEP) corpus fetch qmsum --dest $(QMSUM) --quiet; \
	elif test -e $(QMSUM)/LICENSE; then $(RAGSWEEP) corpus verify qmsum --dest $(QMSUM); \
	else echo "qmsum: not fetched (no QMSUM_MIRROR, no ../shared/data/qmsum/mirror, $${why#qmsum: }): this sweep is single-corpus"; fi
endif

# EXECUTOR=k8s needs only the corpora (QMSum fetched first, as for the local one): the release's injector
# builds the two-corpus state in the cluster. The local executor fetches QMSum first, then a second make picks the state: STATE is read when a make starts,
# so only a make started after the fetch sees whether QMSum is there (a -qmsum state or not).
sweep: $(if $(filter k8s,$(EXECUTOR)),$(SYNTH)/corpus.json) ## run the ARMS family (fusion|budget|pool|diversity|embedding|all) over the default state and collect; local: fetches QMSum first (EXECUTOR=k8s: the same arms as Jobs on the single-node cluster, on the embedded backend as locally unless BACKENDS="stack" or "stack embedded"; docs/kubernetes.md)
ifeq ($(EXECUTOR),k8s)
	@for step in "corpora:qmsum" "tools:k8s-apiserver-tools k8s-tools" "images:images" "cluster:k8s-up"; do \
	  started=$$(date +%s); echo "[sweep k8s] $${step%%:*}: make $${step#*:}"; \
	  $(MAKE) --no-print-directory $${step#*:} || exit $$?; \
	  echo "[sweep k8s] $${step%%:*} ready in $$(( $$(date +%s) - started ))s"; \
	done
	$(MAKE) sweep-k8s ARMS=$(ARMS) SYNTH_CORPUS=$(SYNTH) BACKENDS="$(or $(BACKENDS),embedded)"
else
	@for step in "install:setup" "fetch:qmsum" "generate:synth" "state:sweep-state"; do \
	  started=$$(date +%s); \
	  $(MAKE) --no-print-directory $${step#*:} || exit $$?; \
	  echo "[sweep] $${step%%:*} ready in $$(( $$(date +%s) - started ))s"; \
	done
	@$(MAKE) --no-print-directory sweep-local
endif

# A sub-make of `make sweep` after `make qmsum`: SWEEP_STATE names the -qmsum state only once QMSum is there.
sweep-state: $(SWEEP_STATE)/state.json

sweep-local: $(SWEEP_STATE)/state.json ## what `make sweep` runs after `make qmsum`: ARMS over the default state as the corpora are now (the -both state when ARMS has the embedding family)
	$(RAGSWEEP) sweep run --state $(SWEEP_STATE) --arms $(ARMS) --executor local --workers $(WORKERS) --out $(VAR) $(if $(RERANKER),--reranker $(RERANKER))

$(BOTH_STATE)/state.json: $(SYNTH)/corpus.json $(if $(call OLD_STATE_SCHEMA,$(BOTH_STATE)),rebuild-old-state)
	$(RAGSWEEP) state build --corpus synthetic=$(SYNTH) $(QMSUM_FLAG) --embedding-text both --out $(BOTH_STATE) --force

$(STACK_STATE)/state.json: $(SYNTH)/corpus.json $(if $(call OLD_STATE_SCHEMA,$(STACK_STATE)),rebuild-old-state)
	$(WITH_STACK_ENV) $(RAGSWEEP) state build --backend stack --corpus synthetic=$(SYNTH) $(QMSUM_FLAG) --out $(STACK_STATE) --force

sweep-backends: $(STACK_STATE)/state.json ## ARMS on the embedded backend and on the stack (same state, make stack-up first), then their agreement
	$(WITH_STACK_ENV) $(RAGSWEEP) sweep run --state $(STACK_STATE) --arms $(ARMS) --workers $(WORKERS) --out $(VAR)
	$(WITH_STACK_ENV) $(RAGSWEEP) sweep run --state $(STACK_STATE) --arms $(ARMS) --workers $(WORKERS) --out $(VAR) --backend stack
	$(RAGSWEEP) agreement --sweep $(VAR) --sweep-id $$($(RAGSWEEP) sweep id --state $(STACK_STATE) --arms $(ARMS)) \
	  --versus $$($(RAGSWEEP) sweep id --state $(STACK_STATE) --arms $(ARMS) --backend stack)

# The synthetic corpus alone: make bench measures the fusion family on it and on the default (two-corpus) state.
SYNTH_STATE := $(VAR)/states/default-$(BUDGET)-$(REGIME)-$(SEED)
ifneq ($(CORPORA_TAG),)
$(SYNTH_STATE)/state.json: $(SYNTH)/corpus.json $(if $(call OLD_STATE_SCHEMA,$(SYNTH_STATE)),rebuild-old-state)
	$(RAGSWEEP) state build --corpus synthetic=$(SYNTH) --out $(SYNTH_STATE) --force
endif

bench: $(STATE)/state.json $(SYNTH_STATE)/state.json ## benchmarks: synthetic generation and its regimes' ablation, index build vs raw encode, retrieval latency (both backends when the stack is up), the fusion family (one arm alone, legs shared, its queries over 1-3 shards, unshared; synthetic and two-corpus states), ragsweep score beside plain pytrec_eval on a 1M-line run, then bench-growth and bench-catalogue
	$(PY) benchmarks/bench_synthetic.py
	$(PY) benchmarks/bench_synthetic_regimes.py
	$(PY) benchmarks/bench_scorer.py
	$(PY) benchmarks/bench_index.py --state $(STATE)
	$(PY) benchmarks/bench_legs.py --state $(SYNTH_STATE) --workers $(WORKERS)
	$(if $(CORPORA_TAG),$(PY) benchmarks/bench_legs.py --state $(STATE) --workers $(WORKERS))
	$(PY) benchmarks/bench_backends.py --state $(STACK_STATE) --workers 1,2
	$(MAKE) --no-print-directory bench-growth
	$(MAKE) --no-print-directory bench-catalogue

bench-growth: $(SYNTH_FULL)/corpus.json ## cost as the corpus grows: cold/warm build and peak memory, retrieval p50/p95 (embedded; OpenSearch exact and HNSW when the stack is up), the fusion family, at 25/50/100/200 meetings (+ QMSum when fetched); docs/growth.svg (about an hour on two cores)
	$(PY) benchmarks/bench_growth.py --synthetic-from $(SYNTH_FULL) --meetings $(GROWTH_MEETINGS) \
	  $(if $(QMSUM_FLAG),--qmsum $(QMSUM)) --cold-max-meetings $(GROWTH_COLD_MAX) --workers $(WORKERS) \
	  --work $(VAR)/bench/growth --plot docs/growth.svg

bench-catalogue: $(STATE)/state.json ## the catalogue's header-state families on the default state: each leg group's context, legs and arms measured, the cross-encoder projected from its measured pairs/s over the pairs the arms send it, and its floor on this CPU (its linear layers alone over those pairs' tokens)
	mkdir -p $(VAR)/bench
	$(PY) benchmarks/bench_catalogue.py --state $(STATE) --workers $(WORKERS) --json $(VAR)/bench/catalogue.json

bench-cold: $(SYNTH)/corpus.json ## the default state's cold build (empty embedding cache) vs raw encode of the same texts, and a warm rebuild (about an hour with QMSum on two cores)
	$(PY) benchmarks/bench_cold_build.py --corpus synthetic=$(SYNTH) $(QMSUM_FLAG)

# The methodology's stage-1 table: QMSum retrieval at corpus scope and at the gold-files oracle scope.
scopes: $(if $(QMSUM_FLAG),$(STATE)/state.json) ## stage-1 scope runs (QMSum at --scope corpus and gold-files) and the QMSum BM25 self-report, into var/bench (for make reproduction)
	@test -n "$(QMSUM_FLAG)" || { echo "make scopes scores QMSum: fetch it into $(QMSUM) first (make qmsum; docs/corpora.md)"; exit 2; }
	for scope in corpus gold-files; do \
	  $(RAGSWEEP) bench --state $(STATE) --corpus qmsum --scope $$scope --workers $(WORKERS) \
	    --control-name scope-$$scope --out $(VAR)/bench/scope-$$scope || exit $$?; \
	done
	$(RAGSWEEP) corpus report qmsum --dest $(QMSUM) --json > $(VAR)/bench/.qmsum-bm25.json.tmp
	mv $(VAR)/bench/.qmsum-bm25.json.tmp $(VAR)/bench/qmsum-bm25.json

# The stage-1 ablation: the methodology's stage-1 index held QMSum alone and embedded the bare chunk text; ours
# holds the synthetic corpus too and embeds the header. QMSum-only states with each text, stage 1 at both scopes.
$(QMSUM_ONLY)-%/state.json: | $(STAMP)
	@test -n "$(QMSUM_FLAG)" || { echo "make ablation scores QMSum: fetch it into $(QMSUM) first (make qmsum; docs/corpora.md)"; exit 2; }
	$(RAGSWEEP) state build --corpus qmsum=$(QMSUM) --embedding-text $* --out $(QMSUM_ONLY)-$* --force

ablation: $(QMSUM_ONLY)-header/state.json $(QMSUM_ONLY)-body/state.json ## the stage-1 ablation: QMSum-only states (header, bare body text) and stage 1 at both scopes on each, into var/bench (for make reproduction)
	for text in header body; do for scope in corpus gold-files; do \
	  out=$(VAR)/bench/qmsum-only-$$text-$$scope; \
	  test $$out/metrics.json -nt $(QMSUM_ONLY)-$$text/state.json && continue; \
	  $(RAGSWEEP) bench --state $(QMSUM_ONLY)-$$text --corpus qmsum --scope $$scope --embedding-text $$text \
	    --workers $(WORKERS) --control-name qmsum-only-$$text-$$scope --out $$out || exit $$?; \
	done; done

# The Stage 4 runs on the default state: the router in the loop (its digest leg and confusion) and the three
# answerers over the synthetic aggregation class.
stage4: $(STATE)/state.json ## the Stage 4 runs: --stage route and the none/product/reference answerers, into var/bench (for make reproduction)
	$(RAGSWEEP) bench --state $(STATE) --stage route --workers $(WORKERS) --control-name route --out $(VAR)/bench/route
	for answerer in none product reference; do \
	  $(RAGSWEEP) bench --state $(STATE) --corpus synthetic --answerer $$answerer --workers $(WORKERS) \
	    --control-name answers-$$answerer --out $(VAR)/bench/answers-$$answerer || exit $$?; \
	done

$(RERANKER_DIR)/ragsweep-reranker.json: | $(STAMP)
	$(RAGSWEEP) reranker train --out $(RERANKER_DIR) --force

reranker: $(RERANKER_DIR)/ragsweep-reranker.json ## train the reranker the rerank arms use (RERANKER_DIR; a MiniLM cross-encoder on a synthetic corpus of its own seed)

reproduction: $(STAMP) ## docs/reproduction.md: the methodology's tables beside ours, from the sweeps and bench runs under var/
	$(RAGSWEEP) report reproduction --sweeps $(VAR) --bench-dir $(VAR)/bench --out docs/reproduction.md

# Every results file the page reads, then the page: QMSum first (a second make sees it), the header families in
# one sweep (their legs shared, the reranker's scores cached on the machine), the embedding family on the -both
# state, the stage-1 scopes, the ablation and the route/answers runs. Hours on two cores when nothing is cached.
reproduction-full: $(STAMP) ## every table's results (catalogue with the reranker, embedding family, scopes, ablation, stage 4), then docs/reproduction.md
	@$(MAKE) --no-print-directory qmsum
	@$(MAKE) --no-print-directory reproduction-results
	@$(MAKE) --no-print-directory reproduction

.PHONY: reproduction-results
reproduction-results: $(STATE)/state.json $(RERANKER_DIR)/ragsweep-reranker.json
	@test -n "$(QMSUM_FLAG)" || { echo "make reproduction-full needs QMSum (make qmsum; docs/corpora.md)"; exit 2; }
	$(RAGSWEEP) sweep run --state $(STATE) --arms fusion,budget,pool,diversity --executor local --workers $(WORKERS) \
	  --out $(VAR) --reranker $(RERANKER_DIR)
	$(MAKE) --no-print-directory sweep-local ARMS=embedding
	$(MAKE) --no-print-directory scopes ablation stage4

baselines-check: $(STAMP) ## re-derive every re-derivable baseline and compare byte for byte (CI=1: the ci ones)
	$(PY) -m jobs.baselines check $(if $(CI),--ci)

# The committed QMSum stage-1 control (baselines/qmsum-stage1-control): both scopes re-derived on the default state
# into var/reproduction-check, every cell compared: exact on the identity it was derived on, within its tolerance
# on another identity of the same claim; another claim is refused (exit 5).
reproduction-check: $(if $(QMSUM_FLAG),$(STATE)/state.json) ## re-derive the QMSum stage-1 control on the default state and compare every cell (exact on the same identity)
	@test -n "$(QMSUM_FLAG)" || { echo "make reproduction-check scores QMSum: fetch it into $(QMSUM) first (make qmsum; docs/corpora.md)"; exit 2; }
	$(RAGSWEEP) report reproduction-check --expected baselines/qmsum-stage1-control/expected.json --state $(STATE) \
	  --workers $(WORKERS) --work $(VAR)/reproduction-check

clean: ## remove generated corpora, states and sweeps (keeps .venv)
	rm -rf $(VAR)

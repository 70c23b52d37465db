# The single entry point: `make run` and `make test` are all a fresh machine needs.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DELETE_ON_ERROR:
.DEFAULT_GOAL := help
MAKEFLAGS += --no-builtin-rules

PYTHON_BOOT ?= python3
VENV        ?= .venv
PY          := $(VENV)/bin/python
STAMP       := $(VENV)/.installed
GEN         := gen
PROTO_SRC   := $(shell find protos -name '*.proto' | sort)
PROTO_STAMP := $(GEN)/.stamp
INDEX_DIR   ?= var/index
RUN_DIR     ?= var/run
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: help
help: ## List targets.
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*?## "}{printf "  %-18s %s\n", $$1, $$2}'

# pip -qq: errors only (a failed install still says why and fails). Each package is looked up in
# both local indexes and is missing from one; with -q pip warned "Location 'file:///opt/...' is
# ignored" about 258 times on a first install.
$(STAMP): requirements.lock pyproject.toml
	$(PYTHON_BOOT) -m venv $(VENV)
	$(PY) -m pip install -qq --require-hashes --no-deps -r requirements.lock
	# The repo root and the generated stubs are importable from the venv (no editable build needed).
	$(PY) scripts/link_venv.py $(GEN)
	touch $@

.PHONY: install
install: $(STAMP) $(PROTO_STAMP) ## Create the venv with pinned dependencies and generate stubs.

# Besides the stubs, a descriptor set of the contracts with their comments (the stubs embed
# descriptors without them): reflection serves it, so `grpcurl describe` shows the contract's
# limits, units and defaults (services/common/server.py). The Makefile is a prerequisite so a
# change to this recipe regenerates an existing gen/.
$(PROTO_STAMP): $(STAMP) $(PROTO_SRC) Makefile
	rm -rf $(GEN) && mkdir -p $(GEN)/grounded
	$(PY) -m grpc_tools.protoc -Iprotos --python_out=$(GEN) --pyi_out=$(GEN) --grpc_python_out=$(GEN) \
		--include_source_info --include_imports --descriptor_set_out=$(GEN)/grounded/descriptor_set.binpb \
		$(PROTO_SRC)
	$(PY) scripts/make_packages.py $(GEN)
	touch $@

.PHONY: protos
protos: $(PROTO_STAMP) ## Generate Python stubs from protos/ into gen/.

.PHONY: lock
lock: ## Recompile requirements.lock from pyproject.toml (needs network to PyPI).
	$(PY) -m piptools compile --quiet --extra dev --generate-hashes --strip-extras --allow-unsafe -o requirements.lock pyproject.toml
	$(PY) -m piptools compile --quiet --generate-hashes --strip-extras --allow-unsafe -o requirements-runtime.lock pyproject.toml

# ---------------------------------------------------------------------------- index and stack
# The reader, the chunker and the sentence splitter change what an index holds (their versions
# are part of its checksum): a change to them re-runs ingest, which rebuilds only when the
# checksum moved, and the touch keeps make from asking again.
# CORPUS names what the index holds (default: the IPC), e.g. CORPUS="data/corpora/indian_law/ipc.json
# my_act.jsonl" (data/corpora/README.md, "Adding an act"). A different CORPUS re-runs ingest: the
# list is kept beside the index ($(INDEX_DIR).corpus, rewritten only when it changes), as file
# times alone would call an index of other files up to date.
CORPUS       ?= data/corpora/indian_law/ipc.json
INDEX_INPUTS := $(CORPUS) data/corpora/acts.json services/retrieval/corpus.py \
	services/retrieval/chunking.py services/common/language/sentences.py \
	services/common/language/footnotes.py
$(INDEX_DIR).corpus: always
	@mkdir -p $(dir $@)
	@echo '$(CORPUS)' | cmp -s - $@ || echo '$(CORPUS)' > $@
$(INDEX_DIR)/manifest.json: $(PROTO_STAMP) $(INDEX_INPUTS) $(INDEX_DIR).corpus
	$(PY) -m services.retrieval.ingest --out $(INDEX_DIR) $(CORPUS)
	@touch $@

.PHONY: always index
always:

index: $(INDEX_DIR)/manifest.json ## Build the FAISS index of CORPUS (default: the bundled IPC; reused when unchanged).

# make run's demo question (QUESTION=... asks another); make ask has no default and wants one.
DEMO_QUESTION := What is the punishment for cheating under section 420?

.PHONY: run
run: install index ## Install, build the index, start Redis + the three services, show a cited answer.
	$(PY) -m stack up --index-dir $(INDEX_DIR)
	$(PY) -m services.synthesis.cli ask "$(or $(QUESTION),$(DEMO_QUESTION))"
	@echo
	@echo "Read a cited section whole (GetDocument): $(PY) -m services.synthesis.cli document IPC_420"
	@echo "Services keep running in the background (logs in $(RUN_DIR)/logs). Stop them with: make stop"

.PHONY: stop
stop: ## Stop the services and Redis started by make run.
	@if [ -x $(PY) ]; then $(PY) -m stack down; else echo "nothing to stop"; fi

.PHONY: ask
ask: ## Ask the running stack a question: make ask QUESTION="..."
	@if [ -z "$(strip $(QUESTION))" ]; then echo 'usage: make ask QUESTION="What is theft?"' >&2; exit 2; fi
	$(PY) -m services.synthesis.cli ask "$(QUESTION)"

# ---------------------------------------------------------------------------- measurement
# Benchmarks and evaluation write JSON + Markdown reports (with the command and machine load) to
# reports/ (gitignored); the summaries worth keeping are copied into docs/ with that command.
DATASET ?= all
DATA    ?=
LIMIT   ?=
ABLATIONS ?=

.PHONY: bench-retrieval
bench-retrieval: install ## Retrieval latency/throughput over gRPC vs echo and raw encode+FAISS; the query encoder on torch vs ONNX Runtime; recall ablations.
	$(PY) -m bench.retrieval_perf
	$(PY) -m bench.query_encoder
	$(PY) -m bench.retrieval_quality

.PHONY: bench-validator
bench-validator: install ## Validator latency (lexical tiers and the entailment model); instructions per call; accuracy.
	$(PY) -m bench.validator_perf
	$(PY) -m bench.validator_model
	$(PY) -m bench.validator_inline
	$(PY) -m bench.validator_pathological
	@if command -v valgrind >/dev/null; then $(PY) -m bench.validator_instructions; \
	else echo "valgrind not installed: instructions per call not counted (apt-get install valgrind)"; fi
	$(PY) -m bench.validator_accuracy
	$(PY) -m bench.breaking_nli
	$(PY) -m bench.role_probe

.PHONY: bench-synthesis
bench-synthesis: install ## The first OpenAI call of a fresh process, with and without the warm-up; StreamAnswer's first validated sentence vs the whole answer.
	$(PY) -m bench.openai_first_call
	$(PY) -m bench.stream

.PHONY: bench-judge
bench-judge: install ## The judge tier: what the validator and synthesis escalate by band (with the oracle ceiling), and the latency an escalation adds.
	$(PY) -m bench.judge

.PHONY: bench
bench: bench-retrieval bench-validator bench-synthesis bench-judge ## Every benchmark (run on a quiet machine: check `uptime`).

.PHONY: eval
eval: install ## Evaluate over gRPC: make eval [DATASET=ipc|squad2|hotpotqa|scifact|all] [DATA=file] [LIMIT=n] [ABLATIONS=1]; the headline is LIMIT=300
	$(PY) -m evaluation --dataset $(DATASET) $(if $(DATA),--data $(DATA)) $(if $(LIMIT),--limit $(LIMIT)) $(if $(ABLATIONS),--ablations)

.PHONY: fuzz
fuzz: install ## Nightly-style fuzzing: >= 100,000 generated inputs against parsing and the validator.
	FUZZ_PROFILE=nightly $(PY) -m pytest -q -p no:cacheprovider tests/fuzz

.PHONY: load
load: install index ## 60 s at concurrency 8 and 32 against SynthesizeAnswer, two retrieval servers; writes reports/load.*
	$(PY) -m bench.load --duration 60 --concurrency 8 32 --retrieval-replicas 2 --index-dir $(INDEX_DIR)

.PHONY: soak
soak: install index ## The 10-minute soak variant of make load (concurrency 8).
	$(PY) -m bench.load --duration 600 --concurrency 8 --index-dir $(INDEX_DIR) --name soak

# ---------------------------------------------------------------------------- trained models
# Training never runs in make run / make test: they load the shipped files in models/ and verify
# their checksums. These targets rebuild them (hours on a 2-core CPU; see training/README.md).
SHARED_TRAIN ?= ../shared/data/train
TRAIN_DIR    ?= var/train/entailment
EPOCHS       ?= 1.8
# A checkpoint in the output folder resumes only the run that wrote it (same data, base and
# arguments); another run stops, naming what differs. FRESH=1 starts over instead.
FRESH        ?=

# A build that would change a vendored mix's bytes stops, naming what differs (the answerability
# mix no longer rebuilds at today's code: its SOURCE.md); FORCE=1 replaces it.
FORCE        ?=

.PHONY: train-data
train-data: install ## Rebuild the training mixes from $(SHARED_TRAIN) into training/data/ (the only step that reads it; FORCE=1 to replace different bytes).
	$(PY) -m training.build_data --shared $(SHARED_TRAIN) $(if $(FORCE),--force)
	$(PY) -m training.build_answerability_data --shared $(SHARED_TRAIN)
	$(PY) -m training.add_statute_headings $(if $(FORCE),--force)

ANSWER_DIR   ?= var/train/answerability
# Three end-to-end report.json files (SQuAD, IPC golden, plain IPC tune) of the configuration the
# new model replaces: calibrate against their rates (v6's way); unset: against the keyword rules.
ANSWER_BASELINE ?=

# The token type ids the shipped models were trained with (both: zeros, the trainer's only way
# until 2026-11-27); the trainer's own default is now segments, as the services feed them.
TOKEN_TYPES ?= zeros
# The token type ids the rebuilt models' manifests tell the services to feed: the shipped ones
# are served segment ids (a rule kept entailment v4 on them, and answerability v6 measured better
# with them: entailment model card, "Token types as trained"). "trained": as TOKEN_TYPES.
SERVE_TOKEN_TYPES ?= segments

.PHONY: train-models
train-models: train-entailment train-answerability ## Train, export (int8 ONNX) and calibrate both shipped models into models/ (long; resumable).

.PHONY: train-entailment
train-entailment: install ## The entailment model (validator): train, export, calibrate.
	nice -n 19 $(PY) -m training.train_entailment --out $(TRAIN_DIR) --epochs $(EPOCHS) --lr 6e-5 \
		--token-types $(TOKEN_TYPES) $(if $(FRESH),--fresh)
	$(PY) -m training.export_onnx --model $(TRAIN_DIR)/final --out models/entailment-minilm-l6 \
		--name entailment-minilm-l6-v4 --serve-token-types $(SERVE_TOKEN_TYPES)
	$(PY) -m training.calibrate --model-dir models/entailment-minilm-l6

.PHONY: train-answerability
train-answerability: install ## The answerability model (synthesis): train, export, then calibrate on shadow-mode runs of the tune sets.
	nice -n 19 $(PY) -m training.train_entailment --data training/data/answerability --out $(ANSWER_DIR) \
		--epochs 4 --batch-size 64 --lr 8e-5 --token-types $(TOKEN_TYPES) $(if $(FRESH),--fresh)
	$(PY) -m training.export_onnx --model $(ANSWER_DIR)/final --data training/data/answerability \
		--out models/answerability-minilm-l6 --name answerability-minilm-l6-v6 \
		--serve-token-types $(SERVE_TOKEN_TYPES)
	$(PY) -m evaluation --dataset squad2 --limit 300 --no-docs --set SYNTHESIS_ANSWERABILITY=shadow
	$(PY) -m evaluation --dataset ipc --no-docs --set SYNTHESIS_ANSWERABILITY=shadow
	$(PY) -m evaluation --dataset ipc --data data/golden/ipc_plain_tune_v1.jsonl --no-docs \
		--set SYNTHESIS_ANSWERABILITY=shadow
	$(PY) -m training.calibrate_answerability \
		$(if $(ANSWER_BASELINE),--baseline $(ANSWER_BASELINE) --max-rate-change 0.02)

.PHONY: train-retrieval
train-retrieval: install ## Experiment (not shipped): fine-tune the retrieval bi-encoder into var/train/retrieval/final.
	nice -n 19 $(PY) -m training.train_retrieval --out var/train/retrieval $(if $(FRESH),--fresh)

# ---------------------------------------------------------------------------- quality gates
# npm ci installs exactly what package-lock.json pins and never rewrites it (npm install did,
# adding the other platforms' optional buf binaries: a dirty tree after every fresh set-up).
node_modules/.bin/buf: package.json package-lock.json
	npm ci --no-audit --no-fund --silent
	touch $@

.PHONY: lint
lint: install node_modules/.bin/buf ## ruff, mypy --strict (services, stack, evaluation), buf lint, buf breaking against the committed contract baseline.
	$(VENV)/bin/ruff check services stack tests scripts bench evaluation training
	$(VENV)/bin/ruff format --check services stack tests scripts bench evaluation training
	$(VENV)/bin/mypy services stack evaluation
	node_modules/.bin/buf lint
	node_modules/.bin/buf breaking --against protos/baseline.binpb

# A deliberate breaking change to the contracts: rebuild the baseline in the same commit and say
# what broke, and why, in docs/CHANGELOG.md.
.PHONY: proto-baseline
proto-baseline: node_modules/.bin/buf ## Rebuild protos/baseline.binpb (the image buf breaking compares against).
	node_modules/.bin/buf build -o protos/baseline.binpb

.PHONY: deploy-check
deploy-check: install ## Render every kustomize overlay, validate offline (--strict), lint YAML.
	bash scripts/deploy_check.sh

.PHONY: test
test: install node_modules/.bin/buf ## Install what is needed and run the whole test suite (+ lint and deploy checks).
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory deploy-check
	$(PY) -m pytest -q -p no:cacheprovider

.PHONY: unit
unit: install ## The fast inner loop: unit tests only (pure domain code and the shipped model), about a minute on 2 cores.
	$(PY) -m pytest -q -p no:cacheprovider tests/unit -m "not slow"

.PHONY: clean
clean: stop ## Remove the venv, generated stubs and built artifacts.
	rm -rf $(VENV) $(GEN) var reports node_modules

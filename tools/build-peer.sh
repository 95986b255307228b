#!/usr/bin/env bash
# Builds the benchmark/correctness peer, llama.cpp, from the pinned npm package
# node-llama-cpp@3.21.1 (which ships llama.cpp release v0.4.0 as a git bundle).
# Everything goes under build/peer/ (git-ignored). AMX is OFF: llama.cpp's AMX
# path crashes on AMX machines (llama.cpp issue #20824); every comparison says so.
# Idempotent: an existing build with the same options (build/peer/CONFIG) is reused.
#
# tools/build-peer.sh GIT_SOURCE NAME [LABEL] builds another llama.cpp the same way (same
# options, Release) into build/NAME from a clone of GIT_SOURCE (a repository or bundle; used
# for the LLaDA 2.x branch of llama.cpp PR #17454, which v0.4.0 cannot run: bench/forward.py
# --peer-dir); LABEL (e.g. "PR #17454") heads build/NAME/VERSION, which results quote.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
git_src=${1:-}
dir="$top/build/${2:-peer}"
[ -z "$git_src" ] || git_src=$(cd "$git_src" && pwd)
mkdir -p "$dir"
cd "$dir"
# The x86 extensions this CPU has, each passed to ggml explicitly (GGML_NATIVE=OFF, so that
# AMX can be left out: llama.cpp's AMX path crashes on AMX machines, issue #20824). An
# extension the CPU lacks must stay off: a build with AVX-VNNI on dies with SIGILL on Zen 4
# (AVX-512 VNNI but no VEX AVX-VNNI) as soon as a Q8_0 dot product runs.
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
has() { case "$flags" in *" $1 "*) echo ON ;; *) echo OFF ;; esac; }
opts="-DGGML_AVX=$(has avx) -DGGML_AVX2=$(has avx2) -DGGML_FMA=$(has fma) -DGGML_F16C=$(has f16c) -DGGML_BMI2=$(has bmi2)
 -DGGML_AVX512=$(has avx512f) -DGGML_AVX512_VBMI=$(has avx512vbmi) -DGGML_AVX512_VNNI=$(has avx512_vnni)
 -DGGML_AVX512_BF16=$(has avx512_bf16) -DGGML_AVX_VNNI=$(has avx_vnni)
 -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
opts=$(echo $opts)
if [ -x bin/llama-diffusion-cli ] && [ -x bin/llama-quantize ] && [ -f lib/libllama.so ] &&
   [ "$(cat CONFIG 2>/dev/null)" = "$opts" ]; then
  # llama-gguf-split (split models, tests/cli/split.sh) came later: an older build gets just it
  if [ ! -x bin/llama-gguf-split ] && [ -d build ]; then
    cmake --build build -j"$(nproc)" --target llama-gguf-split
    cp build/bin/llama-gguf-split bin/
  fi
  echo "peer: llama.cpp already built in $dir"; exit 0
fi
for tool in npm git cmake g++; do
  command -v "$tool" >/dev/null || { echo "peer: '$tool' not found; run: apt-get install -y npm git cmake g++" >&2; exit 1; }
done
if [ -z "$git_src" ] && [ ! -f npm/node_modules/node-llama-cpp/llama/gitRelease.bundle ]; then
  mkdir -p npm && (cd npm && npm install --no-audit --no-fund --ignore-scripts node-llama-cpp@3.21.1 >/dev/null)
fi
if [ ! -d src/.git ]; then
  rm -rf src
  if [ -z "$git_src" ]; then
    git clone -q npm/node_modules/node-llama-cpp/llama/gitRelease.bundle src
  else
    # without the vocabulary files under models/ (a fetched snapshot may lack those blobs)
    git clone -q --no-checkout "$git_src" src
    git -C src sparse-checkout set --no-cone '/*' '!/models/*.gguf' >/dev/null
    git -C src checkout -q
  fi
fi
rm -rf bin lib include CONFIG
# A build that stopped part-way (interrupted, or a session that ended) with the same options
# is resumed: cmake --build is incremental (build/OPTIONS says which options configured it);
# one configured otherwise starts again from nothing.
if [ "$(cat build/OPTIONS 2>/dev/null)" != "$opts" ]; then
  rm -rf build
  # shellcheck disable=SC2086
  cmake -S src -B build -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=ON \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DGGML_NATIVE=OFF $opts -DGGML_CUDA=OFF >/dev/null
  echo "$opts" > build/OPTIONS
fi
cmake --build build -j"$(nproc)" --target llama-diffusion-cli llama-quantize llama-tokenize llama-gguf-split llama ggml
mkdir -p bin lib include
cp build/bin/llama-diffusion-cli build/bin/llama-quantize build/bin/llama-tokenize build/bin/llama-gguf-split bin/
find build -name '*.so*' -exec cp -P {} lib/ \;
cp src/include/llama.h src/ggml/include/*.h include/
if [ -z "$git_src" ]; then echo "v0.4.0 ($(git -C src rev-parse --short HEAD))" > VERSION
else echo "${3:+$3 }$(git -C src log -1 --format='%h %cs' )" > VERSION; fi
echo "$opts" > CONFIG
echo "peer: built llama.cpp $(cat VERSION) ($opts) in $dir"

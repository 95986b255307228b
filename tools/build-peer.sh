#!/usr/bin/env bash
# Builds the benchmark/correctness peer, llama.cpp, from the pinned npm package
# node-llama-cpp@3.21.1 (which ships llama.cpp release v0.4.0 as a git bundle).
# Everything goes under build/peer/ (git-ignored). AMX is OFF: llama.cpp's AMX
# path crashes on AMX machines (llama.cpp issue #20824); every comparison says so.
# Idempotent: an existing build is reused.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir="$top/build/peer"
mkdir -p "$dir"
cd "$dir"
if [ -x bin/llama-diffusion-cli ] && [ -x bin/llama-quantize ] && [ -f lib/libllama.so ]; then
  echo "peer: llama.cpp already built in $dir"; exit 0
fi
for tool in npm git cmake g++; do
  command -v "$tool" >/dev/null || { echo "peer: '$tool' not found; run: apt-get install -y npm git cmake g++" >&2; exit 1; }
done
if [ ! -f npm/node_modules/node-llama-cpp/llama/gitRelease.bundle ]; then
  mkdir -p npm && (cd npm && npm install --no-audit --no-fund --ignore-scripts node-llama-cpp@3.21.1 >/dev/null)
fi
if [ ! -d src/.git ]; then
  rm -rf src
  git clone -q npm/node_modules/node-llama-cpp/llama/gitRelease.bundle src
fi
cmake -S src -B build -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=ON \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF \
  -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
  -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON -DGGML_AVX_VNNI=ON \
  -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DGGML_CUDA=OFF >/dev/null
cmake --build build -j"$(nproc)" --target llama-diffusion-cli llama-quantize llama-tokenize llama ggml
mkdir -p bin lib include
cp build/bin/llama-diffusion-cli build/bin/llama-quantize build/bin/llama-tokenize bin/
find build -name '*.so*' -exec cp -P {} lib/ \;
cp src/include/llama.h src/ggml/include/*.h include/
echo "v0.4.0 ($(git -C src rev-parse --short HEAD))" > VERSION
echo "peer: built llama.cpp $(cat VERSION) (AMX off) in $dir"

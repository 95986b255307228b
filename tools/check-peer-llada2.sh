#!/usr/bin/env bash
# check-peer-llada2.sh SRC: build llama.cpp PR #17454 (the LLaDA2 branch: github.com/wsbagnsv1/llama.cpp
# master, 6896bc30 on 2025-11-26; SRC is a checkout of it) as a peer in build/peer-llada2 (libllama and
# ggml only, CPU, AVX2, -O1 to shorten the compile, nice -n 19 -j1), then compare logits of unmask and the
# peer on tiny-llada2 (F32 gated by eye, Q8_0 reported) over canvases of one 32-token block, where
# block-causal attention equals the bidirectional attention the PR computes.
set -euo pipefail
src_dir=$(cd "${1:?usage: tools/check-peer-llada2.sh LLAMA_CPP_PR17454_SOURCE_DIR}" && pwd)
cd "$(dirname "$0")/.."
mkdir -p build/peer-llada2 && cd build/peer-llada2
[ -e src ] || ln -s "$src_dir" src
root=$(cd ../.. && pwd)
opts="-DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=OFF -DGGML_AVX_VNNI=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF"
if [ ! -f build/bin/libllama.so ] && [ ! -f build/src/libllama.so ]; then
  cmake -S src -B build -DCMAKE_BUILD_TYPE=Release "-DCMAKE_C_FLAGS_RELEASE=-O1 -DNDEBUG" "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG" \
    -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_COMMON=OFF -DGGML_NATIVE=OFF $opts \
    -DGGML_CUDA=OFF -DGGML_OPENMP=OFF > cmake.log 2>&1
  nice -n 19 cmake --build build -j1 --target llama > build.log 2>&1
fi
lib=$(dirname "$(find build -name 'libllama.so' | head -1)")
glib=$(dirname "$(find build -name 'libggml.so' | head -1)")
mkdir -p include && cp src/include/llama.h src/ggml/include/*.h include/
cc -O2 -o peer_logits "$root/bench/peer_logits.c" -Iinclude -L"$lib" -L"$glib" -lllama -lggml -lggml-base \
  -Wl,-rpath,"$PWD/$lib" -Wl,-rpath,"$PWD/$glib"
cc -O2 -o cmp_logits "$root/bench/cmp_logits.c" -lm
U=$root/unmask
for q in f32 q8_0; do
  f=tiny-llada2-$q.gguf
  "$U" synth --shape tiny-llada2 --type $q -o $f 2>/dev/null
  for n in 32 24; do
    toks=$(python3 -c "print(','.join([str((i*37+11)%256) for i in range($n-8)] + ['259']*8))")
    ./peer_logits $f --tokens "$toks" --out peer.f32 -t 1 > peer.out 2> peer.err || { echo "peer failed on $f: $(tail -n2 peer.err)"; continue; }
    "$U" logits -m $f --tokens "$toks" --out um.f32 -t 1
    echo "$q canvas $n: $(./cmp_logits um.f32 peer.f32 1024)"
  done
done

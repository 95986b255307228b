#!/usr/bin/env bash
# gemm.sh: build bench/peak.c and bench/gemm.c against the library objects and run the
# standard GEMM benchmark (LLaDA-8B shapes; Q4_K on every kernel, Q6_K/Q8_0/F16 on the
# 256- and 512-bit VNNI kernels; 1 and 2 threads). Writes bench/results/gemm.json (or $1).
# Takes about 10 minutes on a 2-core machine. Extra arguments after the output file go to gemm.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/results/gemm.json}
shift || true
bench/build-tools.sh
mkdir -p "$(dirname "$out")"
# the kernels of this machine's architecture (gemm skips those the CPU cannot run): on
# AArch64 the SDOT and SMMLA kernels, the second pass on both
case $(uname -m) in
  aarch64|arm64) k1=dotprod,i8mm; k2=dotprod,i8mm ;;
  *)             k1=avx2,avxvnni,avx512,amx; k2=avxvnni,avx512,amx ;;
esac
tmp=$(mktemp)
{
  build/release/gemm --types q4_K --kernels "$k1" "$@"
} > "$tmp"
tmp2=$(mktemp)
build/release/gemm --types q6_K,q8_0,f16 --kernels "$k2" "$@" > "$tmp2"
python3 - "$tmp" "$tmp2" "$out" <<'PY'
import json, sys, datetime, subprocess
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
a["runs"] += b["runs"]
a["peak_gmacs_second_pass"] = b["peak_gmacs"]
a["date"] = datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")
a["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
import os
a["load_avg_at_end"] = ["%.2f" % x for x in os.getloadavg()]
json.dump(a, open(sys.argv[3], "w"), indent=1)
PY
rm -f "$tmp" "$tmp2"
echo "wrote $out"

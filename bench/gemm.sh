#!/usr/bin/env bash
# gemm.sh: build bench/peak.c and bench/gemm.c against the library objects and run the
# standard GEMM benchmark (LLaDA-8B shapes; Q4_K on every kernel, Q6_K/Q8_0/F16 on the
# 256- and 512-bit VNNI kernels; the IQ1/IQ2/IQ3/TQ formats on every kernel at 4096 -> 4096;
# 1 and 2 threads). Writes bench/results/gemm.json (or $1).
# Takes about 12 minutes on a 2-core machine. Extra arguments after the output file go to gemm.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/results/gemm.json}
shift || true
bench/build-tools.sh
mkdir -p "$(dirname "$out")"
# the kernels of this machine's architecture (gemm skips those the CPU cannot run): on
# AArch64 the SDOT and SMMLA kernels, the second pass on both
case $(uname -m) in
  aarch64|arm64) k1=dotprod,i8mm; k2=dotprod,i8mm; k3=dotprod,i8mm ;;
  *)             k1=avx2,avxvnni,avx512,amx; k2=avxvnni,avx512,amx; k3=avx2,avxvnni,avx512 ;;
esac
tmp=$(mktemp)
{
  build/release/gemm --types q4_K --kernels "$k1" "$@"
} > "$tmp"
tmp2=$(mktemp)
build/release/gemm --types q6_K,q8_0,f16 --kernels "$k2" "$@" > "$tmp2"
# the IQ lattices and ternary formats (integer path without repacking, docs/matmul.md): one shape
tmp3=$(mktemp)
build/release/gemm --types iq1_s,iq1_m,iq2_xxs,iq2_xs,iq2_s,iq3_xxs,iq3_s,tq1_0,tq2_0 --kernels "$k3" \
  --shapes 4096x4096 --tokens 32,160 "$@" > "$tmp3"
python3 - "$tmp" "$tmp2" "$tmp3" "$out" <<'PY'
import json, sys, datetime, subprocess
sys.path.insert(0, "bench")
import benchlib as B
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2])); c = json.load(open(sys.argv[3]))
a["machine"] = B.machine()          # its cpu_family keys the comparison with the previous file
a["kernel"] = B.kernel_in_use()     # unmask's own choice here (each run names the kernel it ran)
a["runs"] += b["runs"] + c["runs"]
a["peak_gmacs_second_pass"] = b["peak_gmacs"]
a["date"] = datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")
a["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
import os
a["load_avg_at_end"] = ["%.2f" % x for x in os.getloadavg()]
B.keep_previous(sys.argv[4])
json.dump(a, open(sys.argv[4], "w"), indent=1)
PY
rm -f "$tmp" "$tmp2" "$tmp3"
echo "wrote $out"

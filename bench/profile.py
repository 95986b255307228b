#!/usr/bin/env python3
"""profile.py MODEL.gguf NAME [--threads N] [--passes P] [--partial A:B]: where unmask's forward
pass spends its time, per part of the model (`unmask logits --profile`: wall time between the
parts' boundaries, the weight products' multiply-accumulates, the thread pool's dispatches and
the caller's wait in them), over the same canvas as bench/forward.py, with the machine's
measured int8 peak (bench/peak.c) to compare the products' rate with. Writes
bench/results/profile-NAME-tN.json; with --partial A:B the pass of a cached step (rows A..B-1
against a K/V cache of the canvas, `unmask logits --partial`), profile-NAME-partial-tN.json."""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402


def peaks_for(threads, kernel):
    """bench/peak.c's peaks, and the int8 and f32 families the kernel is measured against
    (named by peak.c, the one place that rule lives)."""
    exe = os.path.join(B.WORK, "peak")
    subprocess.run(["cc", "-std=c11", "-D_GNU_SOURCE", "-O2", "-pthread", "-I" + os.path.join(B.ROOT, "src"),
                    "-o", exe, os.path.join(B.ROOT, "bench", "peak.c")], check=True)
    d = json.loads(subprocess.run([exe, str(threads), kernel], capture_output=True, text=True, check=True).stdout)
    return d[d["int8_family"]][str(threads)], d[d["f32_family"]][str(threads)], d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("name")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--prompt", default=B.PROMPT)
    ap.add_argument("--partial", default="", help="A:B: profile the cached step's pass over rows A..B-1")
    a = ap.parse_args()
    os.makedirs(B.WORK, exist_ok=True)
    canvas = B.tokenize(a.model, a.prompt) + [B.mask_id(a.model)] * a.gen
    argv = [B.UNMASK, "logits", "-m", a.model, "--tokens", ",".join(map(str, canvas)), "-t", str(a.threads),
            "--reps", str(a.passes), "--profile"] + (["--partial", a.partial] if a.partial else [])
    types = B.weight_types(a.model)
    t = B.timed(argv)
    if t["rc"] != 0:
        sys.exit(f"profile.py: unmask logits failed: {t['stderr'].strip()}")
    j = json.loads(t["stdout"])
    peak, peak_f32, peaks = peaks_for(a.threads, j["kernel"])
    # the float-tile path (F16/BF16/F32 weights) multiplies in f32: compare with the FMA peak
    float_weights = max(types, key=types.get) in ("f16", "bf16", "f32")
    if float_weights:
        peak = peak_f32
    p = j["profile"]
    res = B.header("profile")
    res.update({"model": a.name, "file": os.path.basename(a.model), "threads": a.threads, "kernel": j["kernel"],
                "canvas_tokens": len(canvas), "passes": a.passes, "forward_ms": j["forward_ms_median"],
                "forward_ms_all": j["forward_ms"], "parts_ms": p["parts_ms"], "macs": p["macs"],
                "matmul_ms": p["matmul_ms"], "gmacs_total": p["macs"] / 1e9,
                "dispatches": p.get("dispatches"), "handoff_ms": p.get("handoff_ms"),
                "partial": j.get("partial"),
                "gmac_per_s_matmul": p["macs"] / (p["matmul_ms"] / 1e3) / 1e9,
                "weight_types": types, "peak_kind": "f32 FMA" if float_weights else "int8",
                "peak_gmacs": peak, "peaks": peaks,
                "command": B.cmdline([x if not x[:1].isdigit() or "," not in x else "CANVAS_IDS" for x in argv])})
    kind = "-partial" if a.partial else ""
    B.finish(res, f"profile-{a.name}{kind}-t{a.threads}.json", ("forward_ms", "gmac_per_s_matmul"))


if __name__ == "__main__":
    main()

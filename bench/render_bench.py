"""render_bench.py: README tables for the benchmark results (bench/results/forward-*.json,
e2e-*.json, gemm.json), loaded by tools/render-readme.py. Every figure comes from a file."""
import glob
import json
import os

RES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def _load(pattern):
    return [json.load(open(p)) for p in sorted(glob.glob(os.path.join(RES, pattern)))]


def forward_table():
    rows = _load("forward-*.json")
    if not rows:
        return "_no results yet: run `make bench`_"
    out = ["| model | file | threads | llama.cpp ms | unmask ms | ratio | llama.cpp peak RSS | unmask peak RSS | RSS / file |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for d in rows:
        m, r = d["median_forward_ms"], d["median_peak_rss_kb"]
        out.append(f"| {d['model']} | {d['file_bytes'] / 1e9:.2f} GB | {d['threads']} | {m['peer']:.0f} | {m['unmask']:.0f} | "
                   f"{d['ratio_unmask_over_peer']:.2f}x | {r['peer'] / 1e6:.2f} GB | {r['unmask'] / 1e6:.2f} GB | "
                   f"{r['unmask'] * 1024 / d['file_bytes']:.2f} |")
    d = rows[0]
    out.append("")
    out.append(f"One forward pass over {d['canvas']}; medians of {len(d['runs']) // 2} alternating processes x 2 passes. "
               f"Machine: {d['machine']['cpu']}, {d['machine']['cores']} cores. Peer: {d['peer']}.")
    return "\n".join(out)


def e2e_table():
    rows = _load("e2e-*.json")
    if not rows:
        return "_no results yet: run `make bench`_"
    out = ["| model | threads | llama.cpp ms/step | unmask ms/step | ratio | llama.cpp tok/s | unmask tok/s | llama.cpp load s | unmask load s | llama.cpp RSS | unmask RSS |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for d in rows:
        p, u = d["median"]["peer"], d["median"]["unmask"]
        out.append(f"| {d['model']} | {d['threads']} | {p['ms_per_step']:.1f} | {u['ms_per_step']:.1f} | {d['ratio_ms_per_step']:.2f}x | "
                   f"{p['tokens_per_s']:.1f} | {u['tokens_per_s']:.1f} | {p['load_s']:.2f} | {u['load_s']:.2f} | "
                   f"{p['peak_rss_kb'] / 1e6:.2f} GB | {u['peak_rss_kb'] / 1e6:.2f} GB |")
    d = rows[0]
    out.append("")
    out.append(f"Whole generations on a {d['canvas']}-token canvas, {d['steps']} steps, medians of "
               f"{len(d['runs']) // 2} alternating rounds. Commands: `{d['commands']['unmask']}` and "
               f"`{d['commands']['peer']}` (see bench/e2e.sh for why the peer runs the timestep schedule). "
               f"Machine: {d['machine']['cpu']}, {d['machine']['cores']} cores. Peer: {d['peer']}.")
    return "\n".join(out)


RENDERERS = {"bench-forward": forward_table, "bench-e2e": e2e_table}


def gemm_table():
    path = os.path.join(RES, "gemm.json")
    if not os.path.exists(path):
        return "_no results yet: run `bench/gemm.sh`_"
    d = json.load(open(path))
    runs = [r for r in d["runs"] if r["n_tokens"] == 160 and r["threads"] == 2]
    kernels = [k for k in ("avx2", "avxvnni", "avx512", "amx") if any(r["kernel"] == k for r in runs)]
    out = ["| weights | shape (in -> out) | " + " | ".join(f"{k} GMAC/s (share of peak)" for k in kernels) + " |",
           "|---|---|" + "---:|" * len(kernels)]
    seen = []
    for r in runs:
        key = (r["type"], r["n_in"], r["n_out"])
        if key in seen:
            continue
        seen.append(key)
        cells = []
        for k in kernels:
            m = [x for x in runs if (x["type"], x["n_in"], x["n_out"], x["kernel"]) == key + (k,)]
            if not m:
                cells.append("-")
                continue
            x = m[0]
            frac = x.get("frac_f32_peak", x["frac_int8_peak"]) if r["type"] in ("f16", "bf16", "f32") else x["frac_int8_peak"]
            cells.append(f"{x['gmacs_cpu']:.0f} ({100 * frac:.0f}%)")
        out.append(f"| {r['type']} | {r['n_in']} -> {r['n_out']} | " + " | ".join(cells) + " |")
    pk = d["peak_gmacs"]
    out.append("")
    out.append(f"160 tokens, 2 threads, GMAC/s per CPU-second (the machine was shared: wall-clock rates are lower). "
               f"Peaks measured by bench/peak.c ({d['peak_method']}): int8 AVX-512 VNNI {pk['avx512']['2']:.0f}, "
               f"AVX-VNNI {pk['avxvnni']['2']:.0f}, AVX2 {pk['avx2']['2']:.0f}, f32 FMA-512 {pk['f32-512']['2']:.0f} GMAC/s "
               f"on 2 threads. {d['cpu']}, {d['date']}.")
    return "\n".join(out)


RENDERERS["bench-gemm"] = gemm_table

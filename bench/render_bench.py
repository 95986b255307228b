"""render_bench.py: README tables for the benchmark results (bench/results/forward-*.json,
e2e-*.json, profile-*.json, moe-*.json, blocks-*.json, gemm.json, rows.json), loaded by tools/render-readme.py. Every figure comes
from a file; nothing here is typed by hand. Files under bench/results/archive/ are not read.

Regressions: beside the speed figures of the forward, generation, profile, GEMM and few-row
tables stands the previous committed figure from the same CPU family (bench/results/history/,
kept by benchlib.keep_previous when a run overwrites a committed result), and a slowdown of
more than 10% is flagged in bold. Results from another CPU family are never compared."""
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import COMMITTED, ROOT, load_json  # noqa: E402

RES = COMMITTED   # tests point it elsewhere
# Issue 8's targets on the 8B-class files at 2 threads (ms/step ratios to llama.cpp, RSS / file).
TARGET_BEST, TARGET_AVX512, TARGET_RSS = 0.15, 0.8, 1.1
ORDER = {"llada-8b-q4_k_m": 0, "dream-7b-q4_k_m": 1, "llada-moe-7b-q4_k_m": 2, "llada2-mini-q4_k_m": 3, "unmask-demo": 4}


def _load(pattern):
    rows = []
    for p in glob.glob(os.path.join(RES, pattern)):
        d = json.load(open(p))
        d["_file"] = os.path.basename(p)
        rows.append(d)
    return sorted(rows, key=lambda d: (ORDER.get(d.get("model"), 9), d.get("model", ""), -d["threads"]))


SLOWER = 0.10        # a figure this much worse than the previous one of its CPU family is flagged


def _previous(d, name=None):
    """The previous committed result of d's file from d's CPU family (bench/results/history/),
    or None (no history, no family recorded, or the previous one is not older)."""
    fam = d.get("machine", {}).get("cpu_family")
    path = os.path.join(RES, "history", name or d.get("_file", ""))
    if not fam or not os.path.exists(path):
        return None
    prev = json.load(open(path)).get(fam)
    return prev if prev and prev.get("date", "") < d.get("date", "") else None


def _vs(cur, prev, higher_is_better, fmt=None):
    """' (was P)' beside a figure, with the change in bold when it is more than 10% slower."""
    if prev is None or cur is None or not prev:
        return ""
    fmt = fmt or _ms
    change = cur / prev - 1
    slower = change < -SLOWER if higher_is_better else change > SLOWER
    return f" (was {fmt(prev)}" + (f": **{100 * change:+.0f}%, slower**)" if slower else ")")


def _dig(d, *keys):
    """d[k0][k1]... or None where a key is missing."""
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def _gb(kb):
    return f"{kb / 1e6:.2f} GB" if kb >= 1e5 else f"{kb / 1e3:.0f} MB"


def _ms(x):
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}" if x >= 10 else f"{x:.2f}"


def _simd(m):
    """The widest integer SIMD a result's machine had, from its recorded CPU flags."""
    f = set(m.get("flags", []))
    if "avx512_vnni" in f:
        return "AVX-512 VNNI"
    if "avx512bw" in f:
        return "AVX-512"
    return "AVX2" if "avx2" in f else "no AVX2"


# CPU families as /proc/cpuinfo gives them (benchlib.cpu_family), named where known
CORES = {"AMD family 25 model 1": "Zen 3", "AMD family 25 model 17": "Zen 4", "AMD family 26 model 2": "Zen 5"}


def _cpu(m):
    fam = m.get("cpu_family")
    core = f"{CORES[fam]}, " if fam in CORES else ""
    return f"{m['cpu']} ({core}{_simd(m)}, {'AMX' if m['amx'] else 'no AMX'})"


def _where(d, rows=None):
    m, v = d["machine"], d["versions"]
    rows = rows or [d]
    # rows measured on different machines (the CPU changes between sessions) name each one
    by_cpu = {}
    for x in rows:
        key = (_cpu(x["machine"]), x["date"][:10])
        models = by_cpu.setdefault(key, [])
        if f"{x['model']} t{x['threads']}" not in models:
            models.append(f"{x['model']} t{x['threads']}")
    if len(by_cpu) > 1:
        machine = "machines: " + "; ".join(f"{c} {day} (rows of {', '.join(ms)})" for (c, day), ms in by_cpu.items())
        machine += f", {m['cores']} cores each"
    else:
        machine = f"{_cpu(m)}, {m['cores']} cores, {d['date'][:10]}"
    commits = sorted({x["versions"]["commit"] for x in rows})
    dirty = any(x["versions"].get("sources_as_committed") is False for x in rows)
    # results taken with different peer builds each name theirs, with the models they cover
    by_peer = {}
    for x in rows:
        models = by_peer.setdefault(x["versions"]["peer"], [])
        if x["model"] not in models:
            models.append(x["model"])
    peer = (f"peer {v['peer']}" if len(by_peer) == 1 else
            "peers " + "; ".join(f"{p} (rows of {', '.join(ms)})" for p, ms in by_peer.items()))
    return (f"{machine}; {peer} (llama.cpp's AMX path crashes on AMX machines, llama.cpp issue #20824); "
            f"unmask commit{'s' if len(commits) > 1 else ''} {', '.join(commits)}"
            f"{' with uncommitted source changes' if dirty else ''}")


def _ukernel(d, who):
    return "avx512" if who == "unmask-avx512" else d["unmask_kernel"]


def forward_table():
    rows = _load("forward-*.json")
    if not rows:
        return "_no results yet: run `make bench`_"
    out = ["| model | file | threads | llama.cpp ms | unmask ms (kernel) | unmask / llama.cpp | llama.cpp peak RSS | unmask peak RSS | unmask RSS / file |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for d in rows:
        med, prev = d["median"], _previous(d)
        for who in [w for w in med if w != "peer"]:
            u, p = med[who], med["peer"]
            was = _vs(u["forward_ms"], _dig(prev, "median", who, "forward_ms"), False)
            out.append(f"| {d['model']} | {d['file_bytes'] / 1e9:.2f} GB | {d['threads']} | {_ms(p['forward_ms'])} | "
                       f"{_ms(u['forward_ms'])}{was} ({_ukernel(d, who)}) | **{d['ratio'][who]:.2f}x** | {_gb(p['peak_rss_kb'])} | "
                       f"{_gb(u['peak_rss_kb'])} | {u['peak_rss_kb'] * 1024 / d['file_bytes']:.2f} |")
    d = rows[0]
    canv = ", ".join(sorted({f"{x['canvas']['prompt_tokens']} + {x['canvas']['masks']} on {x['model']}" for x in rows}))
    passes = ", ".join(sorted({f"{x['passes_per_process']} on {x['model']}" for x in rows}))
    out += ["", f"One forward pass over the canvas of the generation rows (prompt + masks: {canv}), every row's "
            f"logits; medians over {d['rounds']} alternating processes per runtime, each loading the file and "
            f"running several passes ({passes}; a small model's passes take milliseconds). {_where(d, rows)}."]
    return "\n".join(out)


def e2e_table():
    rows = _load("e2e-*.json")
    if not rows:
        return "_no results yet: run `make bench`_"
    out = ["| model | threads unmask / llama.cpp | llama.cpp ms/step | unmask ms/step (kernel) | unmask / llama.cpp | "
           "tok/s llama.cpp / unmask | load s llama.cpp / unmask | peak RSS llama.cpp / unmask | unmask RSS / file |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for d in rows:
        med, prev = d["median"], _previous(d)
        p = med["peer"]
        for who in [w for w in med if w != "peer"]:
            u = med[who]
            was = _vs(u["ms_per_step"], _dig(prev, "median", who, "ms_per_step"), False)
            out.append(f"| {d['model']} | {d['threads']} / {d['peer_threads']} | {_ms(p['ms_per_step'])} | "
                       f"{_ms(u['ms_per_step'])}{was} ({_ukernel(d, who)}) | **{d['ratio_ms_per_step'][who]:.2f}x** | "
                       f"{p['tokens_per_s']:.2f} / {u['tokens_per_s']:.2f} | {p['load_s']:.2f} / {u['load_s']:.2f} | "
                       f"{_gb(p['peak_rss_kb'])} / {_gb(u['peak_rss_kb'])} | {u['rss_over_file']:.2f} |")
    d = rows[0]
    prompts = ", ".join(sorted({f"{x['prompt_tokens']} tokens on {x['model']}" for x in rows}))
    out += ["", f"Whole generations: {d['generated_tokens']} tokens after a short prompt ({prompts}), "
            f"{d['steps']} steps, block {d['block']}; one process per run, medians of {d['rounds']} "
            f"alternating rounds; tokens/s = {d['generated_tokens']} / generation time. Commands: "
            f"`{d['commands']['unmask']}` and `{d['commands']['peer']}` (bench/e2e.py says why the peer runs the "
            f"timestep schedule: same work per step). {_where(d, rows)}."]
    return "\n".join(out)


def targets_table():
    rows = [d for d in _load("e2e-*.json") if d["threads"] == 2 and d["model"] in ("llada-8b-q4_k_m", "dream-7b-q4_k_m")]
    if not rows:
        return "_no results yet: run `make bench`_"
    out = ["| model | target | measured | met |", "|---|---|---:|---|"]
    for d in rows:
        med, r = d["median"], d["ratio_ms_per_step"]
        best = d["unmask_kernel"]
        avx = r.get("unmask-avx512", r["unmask"] if best == "avx512" else None)
        amx_note = "" if best == "amx" else f" (best kernel on this CPU: {best}; no AMX)"
        out.append(f"| {d['model']} | ms/step <= {TARGET_BEST}x llama.cpp, best kernels{amx_note} | {r['unmask']:.2f}x | "
                   f"{'yes' if r['unmask'] <= TARGET_BEST else '**no**'} |")
        if avx is not None:
            out.append(f"| {d['model']} | ms/step <= {TARGET_AVX512}x llama.cpp, UNMASK_KERNEL=avx512 | {avx:.2f}x | "
                       f"{'yes' if avx <= TARGET_AVX512 else '**no**'} |")
        rss = max(med[w]["rss_over_file"] for w in med if w != "peer")
        out.append(f"| {d['model']} | peak RSS <= {TARGET_RSS}x file size | {rss:.2f}x | {'yes' if rss <= TARGET_RSS else '**no**'} |")
    return "\n".join(out)


# Issue 17's gates on the 8B-class files at 2 threads: a step reusing the dual cache, a whole
# 32-step generation with --cache dual (both against llama.cpp), peak RSS / (file + cache).
TARGET_CACHED_STEP, TARGET_CACHED_GEN = 0.08, 0.15
TARGET30_CACHED_STEP, TARGET30_CACHED_GEN = 0.07, 0.12     # issue 30, on AVX-512 machines
FLAGS = {"unmask": "unmask (exact)", "unmask-dual": "unmask `--cache dual`", "unmask-fast": "unmask `--fast`"}


def cached_table():
    rows = [d for d in _load("e2e-*.json") + _load("cached-*.json") if d.get("ratio_cached")]
    if not rows:
        return "_no results yet: run `make bench` (bench/e2e.py runs --cache dual and --fast)_"
    out = ["| model | runtime | steps | ms per step (cache-reusing steps) | generation s | tok/s | "
           "step / llama.cpp step | generation / llama.cpp | peak RSS / (file + cache) |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    gates = ["| model | target | measured | met |", "|---|---|---:|---|"]
    for d in rows:
        med, p = d["median"], d["median"]["peer"]
        out.append(f"| {d['model']} | llama.cpp | {d['steps']} | {_ms(p['ms_per_step'])} | {p['generate_ms'] / 1000:.1f} | "
                   f"{p['tokens_per_s']:.2f} | 1 | 1 | {p['rss_over_file']:.2f} (no cache) |")
        for who in ("unmask", "unmask-dual", "unmask-fast"):
            if who not in med:
                continue
            u, rc = med[who], d["ratio_cached"].get(who, {})
            step = (f"{_ms(u['ms_per_step'])} ({_ms(u['partial_step_ms'])})" if "partial_step_ms" in u
                    else _ms(u["ms_per_step"]))
            step_ratio = (f"{rc['partial_step']:.3f}x" if rc.get("partial_step") else f"{d['ratio_ms_per_step'][who]:.2f}x")
            rss = u.get("rss_over_file_plus_cache", u["rss_over_file"])
            out.append(f"| {d['model']} | {FLAGS[who]} "
                       f"| {u.get('steps_run', d['steps']):.0f} | {step} | {u['generate_ms'] / 1000:.1f} | {u['tokens_per_s']:.2f} | "
                       f"{step_ratio} | **{u['generate_ms'] / p['generate_ms']:.3f}x** | {rss:.2f} |")
        if d["threads"] == 2 and "unmask-dual" in d["ratio_cached"]:
            rc, u = d["ratio_cached"]["unmask-dual"], med["unmask-dual"]
            rss = u.get("rss_over_file_plus_cache", u["rss_over_file"])
            for what, x, t in (("a step reusing the dual cache", rc["partial_step"], TARGET_CACHED_STEP),
                               ("a 32-step generation with --cache dual", rc["generation"], TARGET_CACHED_GEN),
                               ("peak RSS / (file + cache)", rss, TARGET_RSS)):
                unit = "" if what.startswith("peak") else " x llama.cpp"
                gates.append(f"| {d['model']} | {what} <= {t}{unit} | {x:.3f} | {'yes' if x <= t else '**no**'} |")
            if d.get("kernel") == "avx512":      # issue 30's tighter targets for AVX-512 machines
                for what, x, t in (("a step reusing the dual cache (issue 30, AVX-512)", rc["partial_step"],
                                    TARGET30_CACHED_STEP),
                                   ("a 32-step generation with --cache dual (issue 30, AVX-512)", rc["generation"],
                                    TARGET30_CACHED_GEN)):
                    gates.append(f"| {d['model']} | {what} <= {t} x llama.cpp | {x:.3f} | {'yes' if x <= t else '**no**'} |")
            if "unmask-fast" in d["ratio_cached"]:
                f = d["ratio_cached"]["unmask-fast"]["tokens_per_s_over_peer"]
                gates.append(f"| {d['model']} | --fast tokens/s against llama.cpp (reported, no target) | {f:.1f}x | - |")
    out += ["", f"Whole generations of {rows[0]['generated_tokens']} tokens after a {rows[0]['prompt_tokens']}-token prompt, block "
            f"{rows[0]['block']}, one process per run, medians of {', '.join(sorted({str(x['rounds']) for x in rows}))} alternating rounds "
            f"(unmask at {', '.join(sorted({str(x['threads']) for x in rows}))} threads, llama.cpp at "
            f"{', '.join(sorted({str(x['peer_threads']) for x in rows}))}). The runtime column gives unmask's flags beyond the exact "
            f"run's; the cache-reusing steps are the partial passes between refreshes. llama.cpp has no cache: every step is a "
            f"full pass. `--fast` (no preset measured these files: Fast-dLLM's `--threshold 0.9 --cache dual`) chooses its own "
            f"steps: on these random-weight files no position is ever 0.9 sure, so it commits one token per step (128 steps); "
            f"on a trained model it takes far fewer"
            f"{_fast_on_sudoku()}. {_where(rows[0], rows)}.", "", "Issue 17's targets (and issue 30's, on a machine whose kernel is AVX-512):", ""] + gates
    return "\n".join(out)


def profile_table():
    rows = _load("profile-*.json")
    if not rows:
        return "_no results yet: run `make bench`_"
    out = []
    for d in rows:
        tot = d["forward_ms"]
        types = ", ".join(f"{k} {v / tf:.0%}" for tf in [sum(d["weight_types"].values())]
                          for k, v in sorted(d["weight_types"].items(), key=lambda kv: -kv[1]))
        part = d.get("partial")
        what = (f"a cached step's pass (rows {part['first']}-{part['end'] - 1}, {part['rows']} rows, against an "
                f"{part['cache_type'].upper()} K/V cache of the {d['canvas_tokens']}-token canvas)" if part else
                f"{d['canvas_tokens']} tokens")
        hand = (f" The thread pool: {d['dispatches']:,} dispatches per pass, the calling thread waiting "
                f"{_ms(d['handoff_ms'])} ms in them after its own share (hand-offs; inside the parts below)."
                if d.get("dispatches") is not None else "")
        prev = _previous(d)
        was_ms = _vs(tot, _dig(prev, "forward_ms"), False)
        was_rate = _vs(d["gmac_per_s_matmul"], _dig(prev, "gmac_per_s_matmul"), True, lambda x: f"{x:.0f}")
        out += [f"**{d['model']}** ({types} of the weight bytes), {what}, {d['threads']} threads, "
                f"kernel {d['kernel']}: {_ms(tot)}{was_ms} ms per forward pass (median of {d['passes']}); "
                f"{_ms(d['gmacs_total'])} GMAC of weight products at {d['gmac_per_s_matmul']:.0f}{was_rate} GMAC/s = "
                f"{100 * d['gmac_per_s_matmul'] / d['peak_gmacs']:.0f}% of the measured {d['peak_kind']} peak "
                f"({d['peak_gmacs']:.0f} GMAC/s, bench/peak.c).{hand}", "",
                "| part | ms | share |", "|---|---:|---:|"]
        for name, ms in sorted(d["parts_ms"].items(), key=lambda kv: -kv[1]):
            if ms > 0:      # parts the architecture does not have (MoE routing on a dense model) are left out
                out.append(f"| {name} | {_ms(ms)} | {100 * ms / tot:.1f}% |")
        out.append("")
    return "\n".join(out).rstrip()


def gemm_table():
    d = load_json(RES, "gemm.json")
    if not d:
        return "_no results yet: run `bench/gemm.sh`_"
    prev = _previous(d, "gemm.json")
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
            pm = [y["gmacs_cpu"] for y in (prev or {}).get("runs", [])
                  if all(y.get(f) == x[f] for f in ("type", "n_in", "n_out", "kernel", "n_tokens", "threads"))]
            was = _vs(x["gmacs_cpu"], pm[0] if pm else None, True, lambda v: f"{v:.0f}")
            cells.append(f"{x['gmacs_cpu']:.0f}{was} ({100 * frac:.0f}%)")
        out.append(f"| {r['type']} | {r['n_in']} -> {r['n_out']} | " + " | ".join(cells) + " |")
    pk = d["peak_gmacs"]
    peaks = ", ".join(f"{name} {pk[k]['2']:.0f}" for k, name in (("avx512", "int8 AVX-512 VNNI"), ("avxvnni", "AVX-VNNI"),
                                                                  ("avx2", "AVX2"), ("avx2-i16", "AVX2 int16 sums"),
                                                                  ("f32-512", "f32 FMA-512")) if k in pk)
    out += ["", f"160 tokens, 2 threads, GMAC/s per CPU-second. Peaks measured by bench/peak.c ({d['peak_method']}): "
            f"{peaks} GMAC/s on 2 threads. {d['cpu']}, {d['date']}."]
    return "\n".join(out)


def _fast_on_sudoku():
    """' (N passes for 81 sudoku cells, docs/decoding.md)' from the sudoku methods run of the sudoku
    preset's --fast (models.conf [sudoku] fast; bench/results/sudoku-eval.json), or nothing when
    that run is not there."""
    flags = _preset_fast("sudoku")
    d = load_json(RES, "sudoku-eval.json")
    r = next((r for k, r in (d or {}).get("results", {}).items()
              if k.startswith("easy-") and flags and r["command"].endswith(" " + flags)), None)
    return f" ({r['forward_passes'] / r['total']:.1f} passes for 81 sudoku cells with its `{flags}`, docs/decoding.md)" if r else ""


def _preset_fast(name):
    """models.conf's `fast` of preset [name], or None."""
    section = None
    with open(os.path.join(ROOT, "models.conf")) as f:
        for line in f:
            line = line.split("#")[0].strip()
            if line.startswith("["):
                section = line.strip("[]").strip()
            elif section == name and line.split("=")[0].strip() == "fast":
                return line.split("=", 1)[1].strip()
    return None


def _rows():
    return load_json(RES, "rows.json")


def _pct(x):
    return f"{100 * x:.0f}%"


def rows_table():
    """bench/results/rows.json (bench/rows.py): weight products over few rows against the int8
    peak and the stream-read bandwidth, one line per weight type x shape x rows, both thread
    counts side by side."""
    d = _rows()
    if not d:
        return "_no results yet: run `make bench-rows`_"
    threads = sorted({c["threads"] for c in d["cases"]})
    thr = " / ".join(str(t) for t in threads)
    prev = _previous(d, "rows.json")

    def was(c):
        pm = [y["gmacs_cpu"] for y in (prev or {}).get("cases", [])
              if all(y.get(f) == c[f] for f in ("type", "n_in", "n_out", "rows", "threads"))]
        return _vs(c["gmacs_cpu"], pm[0] if pm else None, True, lambda v: f"{v:.0f}")
    out = [f"| weights | shape (in -> out) | rows | ms per matrix ({thr} threads) | GMAC/s (share of int8 peak) | "
           f"GB/s of weights (share of read bandwidth) | bound: the larger share |",
           "|---|---|---:|---:|---:|---:|---|"]
    keys = []
    for c in d["cases"]:
        k = (c["type"], c["n_in"], c["n_out"], c["rows"])
        if k not in keys:
            keys.append(k)
    for k in keys:
        cs = [next(c for c in d["cases"] if (c["type"], c["n_in"], c["n_out"], c["rows"]) == k and c["threads"] == t)
              for t in threads]
        out.append(f"| {k[0]} | {k[1]} -> {k[2]} | {k[3]} | " + " / ".join(f"{c['ms_per_matrix']:.1f}" for c in cs) +
                   " | " + " / ".join(f"{c['gmacs_cpu']:.0f}{was(c)} ({_pct(c['share_int8_peak'])})" for c in cs) +
                   " | " + " / ".join(f"{c['gbs_cpu']:.2f} ({_pct(c['share_stream'])})" for c in cs) +
                   " | " + " / ".join(f"{c['bound']} {_pct(c['larger_share'])}" for c in cs) + " |")
    larger = [c["larger_share"] for c in d["cases"]]
    met = sum(x >= d["target_larger_share"] for x in larger)
    m, la = d["machine"], d["load_avg_per_round"]
    pk = ", ".join(f"{d['peak_gmacs'][str(t)]:.0f}" for t in threads)
    bw = ", ".join(f"{d['stream_gbs'][str(t)]['cpu']:.1f}" for t in threads)
    out += ["", f"Kernel {d['kernel']} on {m['cpu']} ({m['cores']} cores, {' '.join(m['flags'])}), "
            f"{d['date'][:10]}, unmask commit {d['versions']['commit']}. Rates per CPU-second (MACs or bytes / "
            f"(process CPU seconds / threads)), medians of {len(la)} interleaved rounds; each share is the median of "
            f"a run's rate over the yardstick measured in its own round. Best yardsticks on {thr} threads: "
            f"int8 peak {pk} GMAC/s (bench/peak.c, {d['peak_family']}), stream read {bw} GB/s (bench/stream.c, "
            f"{d['stream_isa']}, {d['arena_bytes'] >> 20} MiB buffer, per CPU-second). The larger share is at "
            f"least {_pct(d['target_larger_share'])} in {met} of {len(larger)} cases (range "
            f"{_pct(min(larger))}-{_pct(max(larger))}). Load average before the rounds: "
            f"{min(la):.1f}-{max(la):.1f}." + (f" {d['notes']}" if d.get("notes") else "")]
    return "\n".join(out)


def rows_roofline():
    """The roofline paragraph of docs/perf.md, from the same file: where the two bounds cross."""
    d = _rows()
    if not d:
        return "_no results yet: run `make bench-rows`_"
    t = max(int(x) for x in d["peak_gmacs"])
    peak, bw = d["peak_gmacs"][str(t)], d["stream_gbs"][str(t)]["cpu"]
    ridge = peak / bw          # MACs per byte where the two bounds meet
    bpw = {}
    for c in d["cases"]:
        bpw[c["type"]] = c["bits_per_weight"]
    per_type = "; ".join(f"{ty} ({b:.2f} bits per weight): {8 / b:.2f} per byte per row, {16 * 8 / b:.0f} at 16 rows, "
                         f"memory-bound below {ridge * b / 8:.1f} rows" for ty, b in sorted(bpw.items()))
    cases = [c for c in d["cases"] if c["threads"] == t]
    n_mem = sum(c["bound"] == "memory" for c in cases)
    by_type = ", ".join(f"{ty} {_pct(min(x))}-{_pct(max(x))}" for ty in sorted(bpw)
                        for x in [[c["larger_share"] for c in d["cases"] if c["type"] == ty]])
    fam = d.get("families_gmacs_one_core", {})
    int32 = (f" Without VNNI the kernel's yardstick is {d['peak_family']} ({fam[d['peak_family']]:.0f} GMAC/s on one "
             f"core before the rounds); the int32 sequence (avx2) ran at {fam['avx2']:.0f}."
             if d["peak_family"] == "avx2-i16" and "avx2" in fam else "")
    pr, la = d.get("peak_gmacs_per_round_one_core", []), d["load_avg_per_round"]
    rounds = (f" In the rounds the one-core peak ranged from {min(pr):.0f} to {max(pr):.0f} GMAC/s at load averages "
              f"of {min(la):.1f}-{max(la):.1f}." if pr else "")
    return (f"On the machine of `bench/results/rows.json` ({d['machine']['cpu']}, kernel {d['kernel']}, {t} threads) "
            f"the int8 peak is {peak:.0f} GMAC/s and the weights stream in at {bw:.1f} GB/s: a product is bound by "
            f"memory only where it does fewer than {ridge:.1f} multiply-accumulates per byte of weights (the ridge of "
            f"the roofline). A matrix of b bits per weight multiplied by R rows does 8R/b per byte: {per_type}. "
            f"Measured, {n_mem} of the {len(cases)} {t}-thread cases are memory-bound; the others reach a larger "
            f"share of the int8 peak than of the bandwidth. The larger share by weight type, both thread counts: "
            f"{by_type} (the issue's target: {_pct(d['target_larger_share'])}).{int32}{rounds}")


def moe_table():
    """Issue 19: the MoE forward pass beside the dense one, each against llama.cpp (bench/moe.py)."""
    rows = _load("moe-t*.json")
    if not rows:
        return "_no results yet: run `make bench` (bench/moe.py)_"
    out = ["| model | threads | llama.cpp ms | unmask ms (kernel) | unmask / llama.cpp | expert products (gate/up + down) | routing, gather, combine | target | met |",
           "|---|---:|---:|---:|---:|---:|---:|---|---|"]
    for d in rows:
        for name, m in d["models"].items():
            med, prof = m["median"], m["profile"]
            parts, tot = prof["parts_ms"], prof["forward_ms"]
            experts = parts.get("ffn gate/up products", 0) + parts.get("ffn down product", 0)
            route = parts.get("moe routing, gather, combine", 0)
            moe = m["role"] == "moe"
            r = m["ratio"]["unmask"]
            out.append(f"| {name} ({'MoE' if moe else 'dense'}) | {d['threads']} | {_ms(med['peer']['forward_ms'])} | "
                       f"{_ms(med['unmask']['forward_ms'])} ({m['unmask_kernel']}) | **{r:.2f}x** | "
                       f"{_ms(experts)} ms ({100 * experts / tot:.0f}%) | {_ms(route) + ' ms' if route else '-'} | "
                       f"{'<= ' + str(d['target_moe_ratio']) + 'x' if moe else 'beside'} | "
                       f"{('yes' if r <= d['target_moe_ratio'] else '**no**') if moe else '-'} |")
    d = rows[0]
    z = d["issue_zen5"]
    m0 = next(iter(d["models"].values()))
    out += ["", f"One forward pass over the generation canvas ({m0['canvas']['prompt_tokens']} prompt tokens + "
            f"{m0['canvas']['masks']} masks), every row's logits, medians of {d['rounds']} alternating processes per "
            f"runtime (bench/forward.py's method); the two middle columns come from one `unmask logits --profile` run "
            f"(its parts' share of that pass). Before the grouped expert products, issue 19 measured on an AMD Zen 5: "
            f"MoE {z['moe_ms']:,} ms against llama.cpp's {z['moe_peer_ms']:,} ({z['moe_ratio']}x), dense {z['dense_ratio']}x. "
            f"{_where(m0, list(d['models'].values()))}."]
    return "\n".join(out)


def blocks_table():
    """Issue 19: LLaDA 2.x block diffusion with the exact block cache (bench/blocks.py)."""
    rows = _load("blocks-*.json")
    if not rows:
        return "_no results yet: run `make bench` (bench/blocks.py)_"
    out = ["| file | runtime | steps | ms/step | tok/s | rows computed | K/V cache | peak RSS | tok/s / llada2 exact |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    what = {"llada2": "unmask, exact block cache (default)", "llada2-nocache": "unmask `--cache none`",
            "dense": "unmask, exact (dense)"}
    for d in rows:
        med = d["median"]
        base = med["llada2"]["tokens_per_s"]
        for who in ("llada2", "llada2-nocache", "dense"):
            if who not in med:
                continue
            u = med[who]
            f = d["dense_model"] if who == "dense" else d["model"]
            rows_c = f"{u['rows_computed']:,.0f}" if u.get("rows_computed") else "-"
            cache = _gb(u["cache_bytes"] / 1024) if u.get("cache_bytes") else "-"
            out.append(f"| {f} | {what[who]} | {u.get('steps_run', d['steps']):.0f} | {_ms(u['ms_per_step'])} | "
                       f"{u['tokens_per_s']:.2f} | {rows_c} | {cache} | {_gb(u['peak_rss_kb'])} | {u['tokens_per_s'] / base:.2f} |")
    d = rows[0]
    r = d["ratio_tokens_per_s"]
    # llama.cpp PR #17454's forward pass on the same file, where bench/forward.py --peer-dir measured it
    fw = [x for x in _load("forward-*.json") if x["model"] == d["model"]]
    peer = (f" llama.cpp PR #17454's own runtime cannot generate with llada2 here (bench/blocks.py says why); its forward "
            f"pass over the same canvas is in the forward-pass table below: unmask's takes {fw[0]['ratio']['unmask']:.2f}x "
            f"its time." if fw else " llama.cpp PR #17454's runtime cannot generate with llada2 here (bench/blocks.py).")
    out += ["", f"Whole generations of {d['generated_tokens']} tokens after a {d['prompt_tokens']}-token prompt, "
            f"{d['steps']} steps, blocks of {d['block']}, {d['threads']} threads, medians of {d['rounds']} alternating "
            f"rounds, end-of-text early stop off. The block cache is exact (block-causal attention: the prompt's and "
            f"finished blocks' keys and values never change) and makes LLaDA 2.x generation {r['cache_over_nocache']:.2f}x "
            f"as fast as recomputing the canvas; {d['model']} runs at {r['llada2_over_dense']:.2f}x the tokens/s of "
            f"{d['dense_model']}.{peer} {_cpu(d['machine'])}, {d['machine']['cores']} cores, {d['date'][:10]}; "
            f"unmask commit {d['versions']['commit']}."]
    return "\n".join(out)


# Issue 30, point 4, with 4 panes: peak RSS over one pane's; a lock-step over one pane's step
TARGET_PANES_RSS, TARGET_PANES_STEP = 1.15, 2.0


def panes_table():
    """Issue 30, point 4: compare panes on one shared model (bench/panes.py)."""
    rows = _load("panes-*.json")
    if not rows:
        return "_no results yet: run `python3 bench/panes.py MODEL NAME`_"
    out = ["| model | file | panes | peak RSS | vs 1 pane | decoding (all panes) | vs 1 pane |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for d in rows:
        for n, p in sorted(d["panes"].items(), key=lambda kv: int(kv[0])):
            out.append(f"| {d['model']} | {_gb(d['model_bytes'] / 1024)} | {n} | {_gb(p['peak_rss_kb'])} | "
                       f"{p['rss_vs_one']:.2f}x | {p['decode_s']:.2f} s | {p['decode_vs_one']:.2f}x |")
    for d in rows:
        m, rss, step = d["machine"], d["rss_4_vs_1"], d["decode_4_vs_1"]
        if d["model_bytes"] >= 1e9:
            why = "" if step <= TARGET_PANES_STEP else (": on 2 cores a cached step is bound by arithmetic, and 4 panes "
                                                         "do 4 times the multiply-adds; docs/perf.md, Compare panes")
            targets = (f"targets for 4 panes: memory at most {TARGET_PANES_RSS}x one pane plus the caches (met: "
                       f"{'yes' if rss <= TARGET_PANES_RSS else '**no**'}, {rss:.2f}x); with `--cache dual` a lock-step "
                       f"at most {TARGET_PANES_STEP:g}x one pane's step (decoding time of 4 panes: "
                       f"{'met' if step <= TARGET_PANES_STEP else '**not met**'}, {step:.2f}x{why}). ")
        else:
            targets = ("the 1.15x target is set for the LLaDA-8B shape; on a model this small each pane's own buffers "
                       "(canvas, logits rows, history) weigh more than the shared weights (before the panes shared one "
                       "model, the visualizer's resident set was 14.2, 21.9 and 37.4 MB with 1, 2 and 4 panes). ")
        out += ["", f"{d['model']}: `unmask record --compare` with the flags `{d['flags']}` in every pane (each pane "
                f"its own seed), {d['threads']} threads, medians of {d['rounds']} rounds alternating the pane counts; "
                + targets + f"{_cpu(m)}, {m['cores']} cores, {d['date'][:10]}; unmask commit {d['versions']['commit']}."]
    return "\n".join(out)


# Issue 28, point 6: unmask's time per step at most this times the port's; peak RSS at most this
# times the file plus the caches
TARGET_DGEMMA_STEP, TARGET_DGEMMA_RSS = 0.35, 1.1


def _rounds_ratio(d, who="unmask", label="unmask / port"):
    """' (ratio per round: a, b, c)' where the result keeps its rounds' times."""
    per = d.get("per_round_ms_per_step", {})
    if not per.get(who) or len(per[who]) != len(per.get("peer", [])):
        return ""
    return f" ({label} per round: " + ", ".join(f"{u / p:.2f}x" for u, p in zip(per[who], per["peer"])) + ")"


def dgemma_table():
    """Issue 28, point 6: DiffusionGemma uniform-state decoding against llama.cpp's port (bench/dgemma.py)."""
    rows = _load("dgemma-*.json")
    if not rows:
        return "_no results yet: run `make bench` with BENCH_DGEMMA_SRC (bench/dgemma.py)_"
    out = ["| model | file | threads | llama.cpp port ms/step | unmask ms/step (kernel) | unmask / port | target | met | "
           "peak RSS: port | unmask | unmask / (file + caches) | met |",
           "|---|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---|"]
    for d in rows:
        med, prev = d["median"], _previous(d)
        kern = next((x.get("kernel") for x in d["runs"] if x.get("kernel")), d.get("kernel", "?"))

        def row(label, who, was):
            r = d["ratio"][who]
            rr = med[who]["peak_rss_kb"] * 1024 / (d["file_bytes"] + d.get("unmask_cache_bytes", 0))
            return (f"| {label} | {_gb(d['file_bytes'] / 1024)} | {d['threads']} | {_ms(med['peer']['ms_per_step'])} | "
                    f"{_ms(med[who]['ms_per_step'])}{was} ({kern}) | **{r:.2f}x** | <= {TARGET_DGEMMA_STEP}x | "
                    f"{'yes' if r <= TARGET_DGEMMA_STEP else '**no**'} | {_gb(med['peer']['peak_rss_kb'])} | "
                    f"{_gb(med[who]['peak_rss_kb'])} | {rr:.2f}x | {'yes' if rr <= TARGET_DGEMMA_RSS else '**no**'} |")
        out.append(row(d["model"], "unmask", _vs(med["unmask"]["ms_per_step"], _dig(prev, "median", "unmask", "ms_per_step"), False)))
        if "unmask_bf16" in med:        # the same rounds with --self-cond-product bf16
            out.append(row(f"{d['model']}, `--self-cond-product bf16`", "unmask_bf16", ""))
    d = rows[0]
    out += ["", f"One canvas of {d['canvas']} positions after a {d['prompt_tokens']}-token prompt (the same ChatML text in "
            f"both: the port's CLI always applies a template, unmask gets --chat-template chatml), random weights "
            f"(unmask synth), so every canvas row's distribution is flat and the self-conditioning product is the "
            f"exact one on all {d['canvas']} rows in both, "
            f"the prompt's K/V cached in both, the entropy-bound sampler with its stop rule off so both run the steps "
            f"asked for; time per step from wall time, (wall({d['steps'][1]} steps) - wall({d['steps'][0]} steps)) / "
            f"{d['steps'][1] - d['steps'][0]} per round (the port's CLI prints no timing for this sampler), medians of "
            f"{d['rounds']} alternating rounds{_rounds_ratio(d)}; unmask's own timer gave "
            f"{_ms(d['median']['unmask']['own_ms_per_step'])} ms/step."
            + (f" The bf16 row: the same rounds with `--self-cond-product bf16` (the self-conditioning product from "
               f"BF16 values in float pairs, AVX-512 BF16's `vdpbf16ps` here; an option, not the default: "
               f"docs/decoding.md){_rounds_ratio(d, 'unmask_bf16', 'bf16 / port')}, its own timer "
               f"{_ms(d['median']['unmask_bf16']['own_ms_per_step'])} ms/step." if "unmask_bf16" in d["median"] else "")
            + f" Peer: {d['versions']['peer']} (built here from a fetched snapshot; CI cannot fetch it). "
            f"{_cpu(d['machine'])}, {d['machine']['cores']} cores, {d['date'][:10]}; unmask commit {d['versions']['commit']}."]
    return "\n".join(out)


RENDERERS = {"bench-forward": forward_table, "bench-e2e": e2e_table, "bench-targets": targets_table,
             "bench-cached": cached_table, "bench-moe": moe_table, "bench-blocks": blocks_table,
             "bench-profile": profile_table, "bench-gemm": gemm_table, "bench-rows": rows_table,
             "bench-rows-roofline": rows_roofline, "bench-panes": panes_table,
             "bench-dgemma": dgemma_table}

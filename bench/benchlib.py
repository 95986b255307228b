"""benchlib.py: what the benchmark drivers (bench/forward.py, bench/e2e.py) share: where a
result ran (machine, CPU flags, versions, load), running one process under /usr/bin/time for
its peak RSS, and the canvas both runtimes are given.

Every driver alternates the runtimes round by round (A B, then B A, ...) so slow drift of the
machine hits both equally, keeps every raw run, and reports medians.
"""
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UNMASK = os.path.join(ROOT, "unmask")
PEER = os.path.join(ROOT, "build", "peer")
WORK = os.path.join(ROOT, "build", "bench")
# where results are written; UNMASK_BENCH_RESULTS redirects them (a trial run of a script)
RESULTS = os.environ.get("UNMASK_BENCH_RESULTS") or os.path.join(ROOT, "bench", "results")
# The prompt of every comparison: short, plain text (no chat template on either side). On
# the byte-level vocabularies of the synthetic LLaDA-8B/Dream-7B files it is 31 tokens (32
# with LLaDA's BOS), so the canvas is 159-160 tokens with 128 masks.
PROMPT = "The quick brown fox jumps over."
# the committed results, which the renderers (tools/render-readme.py, bench/render_*.py) read
COMMITTED = os.path.join(ROOT, "bench", "results")


def load_json(directory, name):
    """DIRECTORY/NAME as JSON (a results file), or None when the file is not there."""
    path = os.path.join(directory, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def _cpuinfo_field(name):
    """A field of /proc/cpuinfo ("" where there is none: macOS has no /proc)."""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith(name):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def cpu_family():
    """The CPU's vendor, family and model as /proc/cpuinfo gives them ("AMD family 26 model 2":
    a Zen 5; Zen 4 is family 25 model 17, Zen 3 family 25 model 1): the key under which a result's
    figures are compared with the previous ones (render_bench.py), so that one instruction set's
    figures are never compared with another's."""
    f = {}
    try:
        for line in open("/proc/cpuinfo"):
            if ":" in line:
                k, v = line.split(":", 1)
                f.setdefault(k.strip(), v.strip())
            elif f:
                break                    # the first processor's block is enough
    except OSError:
        pass
    vendor = {"AuthenticAMD": "AMD", "GenuineIntel": "Intel"}.get(f.get("vendor_id", ""), f.get("vendor_id") or "?")
    return f"{vendor} family {f.get('cpu family', '?')} model {f.get('model', '?')}"


def _cpu_name():
    name = _cpuinfo_field("model name")
    if not name and platform.system() == "Darwin":
        name = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True).stdout.strip()
    return name or platform.machine()


def machine():
    # x86 Linux: "flags"; AArch64 Linux: "Features" (asimddp = SDOT, i8mm = SMMLA)
    flags = (_cpuinfo_field("flags") or _cpuinfo_field("Features")).split()
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {"cpu": _cpu_name(), "cores": os.cpu_count(), "kernel": platform.release(),
            "mem_gb": round(mem / 1e9, 1),
            "flags": [f for f in flags if f.startswith(("avx", "amx", "fma", "f16c", "asimddp", "i8mm", "sve"))],
            "amx": any(f.startswith("amx") for f in flags), "cpu_family": cpu_family()}


def _peer_file(name):
    path = os.path.join(PEER, name)
    return open(path).read().strip() if os.path.exists(path) else "?"


def peer_description():
    """The peer as every result names it: version, AMX off, the ggml extensions it was built
    with (from build/peer/CONFIG, written by tools/build-peer.sh)."""
    on = [o[len("-DGGML_"):-len("=ON")] for o in _peer_file("CONFIG").split() if o.endswith("=ON")]
    if os.path.basename(PEER) != "peer":     # another branch built by tools/build-peer.sh SRC NAME
        return (f"llama.cpp {_peer_file('VERSION')} (build/{os.path.basename(PEER)} from a clone of the branch), "
                f"AMX off, built with {' '.join(on)}")
    return f"llama.cpp {_peer_file('VERSION')} (node-llama-cpp@3.21.1), AMX off, built with {' '.join(on)}"


def versions():
    def run(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT).stdout.splitlines()
        except OSError:
            return []
    um = run([UNMASK, "--version"])
    return {"peer": peer_description(),
            "peer_cmake_options": _peer_file("CONFIG"),
            "unmask": "; ".join(um[:2]),
            "commit": (run(["git", "rev-parse", "--short", "HEAD"]) or ["?"])[0],
            # which tracked files differ from that commit (documentation edits while a long run
            # goes on are common; the binary's sources are what matters)
            "uncommitted_files": sorted(l[3:] for l in run(["git", "status", "--porcelain", "--untracked-files=no"])),
            "sources_as_committed": not run(["git", "status", "--porcelain", "--untracked-files=no", "--",
                                             "src", "ui", "kernels", "Makefile"]),
            "cc": (run(["cc", "--version"]) or ["?"])[0]}


def loadavg():
    return [round(x, 2) for x in os.getloadavg()]


def header(benchmark):
    return {"benchmark": benchmark, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "machine": machine(), "versions": versions(), "load_avg_at_start": loadavg(),
            "kernel": kernel_in_use()}


def timed(argv, env=None):
    """Run argv to completion; returns stdout, stderr, rc, peak RSS (kB) and wall seconds."""
    with tempfile.NamedTemporaryFile("r", suffix=".time", dir=WORK, delete=False) as tf:
        tpath = tf.name
    full_env = dict(os.environ, **(env or {}))
    la = loadavg()[0]
    p = subprocess.run(["/usr/bin/time", "-f", "%M %e", "-o", tpath] + argv, capture_output=True,
                       text=True, errors="replace", env=full_env, cwd=ROOT)
    rss, wall = open(tpath).read().split()[-2:]
    os.unlink(tpath)
    return {"stdout": p.stdout, "stderr": p.stderr, "rc": p.returncode, "peak_rss_kb": int(rss),
            "wall_s": float(wall), "load_before": la}


def tokenize(model, prompt):
    out = subprocess.run([UNMASK, "tokenize", "-m", model, "--ids-only", prompt], capture_output=True,
                         text=True, check=True).stdout
    return [int(t) for t in out.split()]


def mask_id(model):
    out = subprocess.run([UNMASK, "info", "--json", model], capture_output=True, text=True, check=True).stdout
    return json.loads(out)["tokenizer"]["mask_token_id"]


def kernel_in_use():
    """The GEMM kernel unmask runs with this environment (UNMASK_KERNEL honoured), or "?"."""
    demo = os.path.join(ROOT, "models", "unmask-demo.gguf")
    try:
        out = subprocess.run([UNMASK, "logits", "-m", demo, "--tokens", "1,2,3", "--reps", "1", "-t", "1"],
                             capture_output=True, text=True, check=True).stdout
        return json.loads(out)["kernel"]
    except (OSError, subprocess.CalledProcessError, ValueError, KeyError):
        return "?"


def unmask_best_kernel():
    """The GEMM kernel unmask chooses by itself on this CPU (a one-pass probe on the demo model)."""
    env = {k: v for k, v in os.environ.items() if k != "UNMASK_KERNEL"}
    demo = os.path.join(ROOT, "models", "unmask-demo.gguf")
    out = subprocess.run([UNMASK, "logits", "-m", demo, "--tokens", "1,2,3", "--reps", "1", "-t", "1"],
                         capture_output=True, text=True, env=env, check=True).stdout
    return json.loads(out)["kernel"]


def cpu_has(flag):
    """Whether /proc/cpuinfo lists FLAG (e.g. avx512f) for this CPU."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return flag in line.split()
    except OSError:
        pass
    return False


def second_kernel(best):
    """The extra runtime forward.py and e2e.py measure beside unmask's own choice: the AVX-512
    kernels where unmask chose another one (AMX) and the CPU has AVX-512; none otherwise (an
    AVX2-only CPU such as Zen 3 has nothing to compare)."""
    return "avx512" if best != "avx512" and cpu_has("avx512f") and cpu_has("avx512bw") else None


def warm_page_cache(path):
    """Read the whole file once, so that the first run of the first round does not pay for
    disk reads the others skip (a cold first llama.cpp run once measured 80 s of load for a
    4.9 GB file); returns the seconds it took."""
    t0 = time.monotonic()
    with open(path, "rb", buffering=0) as f:
        while f.read(1 << 24):
            pass
    return time.monotonic() - t0


class Unreadable(Exception):
    """A run exited 0 but its output lacks the figures measure() reads."""


def run_rounds(runtimes, rounds, measure, label, attempts=3, before=None):
    """Run every runtime once per round, the order reversed every other round (A B, B A, ...).
    runtimes: {name: (argv, env)}; measure(name, timed_result) -> the run's dict, which gets
    runtime, round, peak RSS, wall time and the load average before it. before(), when given,
    runs before every run, untimed (e.g. warm_page_cache: a run that follows one whose memory
    pushed the model file out of the page cache starts from the same state as the others); what
    it returns is recorded as the run's "before". Returns the runs;
    exits naming the runtime when one fails. A run whose output measure() cannot read (it
    raises Unreadable: llama.cpp's log thread has, once in a while, not printed its timing
    line before the process exited) is run again, up to `attempts` times in all; the run
    records how many unreadable attempts preceded it, and their output is kept in WORK."""
    names, runs = list(runtimes), []
    for r in range(rounds):
        for who in (names if r % 2 == 0 else names[::-1]):
            argv, env = runtimes[who]
            for attempt in range(attempts):
                pre = before() if before else None
                t = timed(argv, env)
                if t["rc"] != 0:
                    sys.exit(f"{label}: {who} failed (exit {t['rc']}): {t['stderr'].strip().splitlines()[-1:]}")
                try:
                    measured = measure(who, t)
                    break
                except Unreadable as ex:
                    keep = os.path.join(WORK, f"unreadable-{who}-r{r + 1}-{attempt + 1}.txt")
                    with open(keep, "w") as f:
                        f.write(t["stdout"] + "\n--- stderr ---\n" + t["stderr"])
                    print(f"{label} round {r + 1} {who}: {ex} (output kept in {os.path.relpath(keep, ROOT)})",
                          file=sys.stderr)
            else:
                sys.exit(f"{label}: {who}: {attempts} runs in a row gave no readable figures")
            run = {"runtime": who, "round": r + 1, "peak_rss_kb": t["peak_rss_kb"], "wall_s": t["wall_s"],
                   "load_avg_before": t["load_before"]}
            if attempt:
                run["unreadable_attempts_before"] = attempt
            if pre is not None:
                run["before"] = pre
            run.update(measured)
            runs.append(run)
            print(f"{label} round {r + 1} {who}: " + ", ".join(f"{k} {v}" for k, v in run.items()
                  if k in ("forward_ms", "ms_per_step", "load_s", "peak_rss_kb")), file=sys.stderr)
    return runs


PEER_LINE = re.compile(r"total time: ([0-9.]+)ms, time per step: ([0-9.]+)ms, sampling time per step: ([0-9.]+)ms")


def measure_peer(t):
    """A llama-diffusion-cli run's figures, from its closing timing line."""
    m = PEER_LINE.findall(t["stderr"])
    if not m:
        raise Unreadable("no timing line in llama-diffusion-cli's output "
                         f"(last line: {t['stderr'].strip().splitlines()[-1:]})")
    total, per, samp = map(float, m[-1])
    return {"generate_ms": total, "ms_per_step": per, "sample_ms_per_step": samp,
            "load_s": t["wall_s"] - total / 1000}


def measure_unmask(t):
    """An `unmask generate --json` run's figures; with a cache, the steps that reused it
    (partial passes) apart from the refreshes."""
    d = json.loads(t["stdout"])
    s = d["steps"]
    r = {"generate_ms": 1000 * d["generate_s"], "ms_per_step": 1000 * d["generate_s"] / len(s),
         "steps_run": len(s), "load_s": d["load_s"], "kernel": d["kernel"],
         "forward_ms_mean": sum(x["forward_ms"] for x in s) / len(s),
         "sample_ms_per_step": sum(x["sample_ms"] for x in s) / len(s),
         "cache_bytes": int(d.get("cache_bytes", 0)), "rows_computed": int(d.get("rows_computed", 0))}
    cached = int(d.get("cache_bytes", 0)) > 0      # without a cache no step is a partial one
    part = [x for x in s if cached and not x.get("cache_refreshed", True)]
    full = [x for x in s if cached and x.get("cache_refreshed")]
    if part:
        r["partial_step_ms"] = sum(x["forward_ms"] + x["sample_ms"] for x in part) / len(part)
        r["partial_steps"] = len(part)
    if full:
        r["refresh_step_ms"] = sum(x["forward_ms"] + x["sample_ms"] for x in full) / len(full)
    return r


def finish(res, name, summary_keys):
    """Write the result file; print the file name and the summary keys as one JSON line."""
    path = write(name, res)
    print(json.dumps(dict({"file": os.path.relpath(path, ROOT)}, **{k: res[k] for k in summary_keys})))


def weight_types(model):
    """{type name: bytes} of the model's 2-D tensors."""
    out = subprocess.run([UNMASK, "info", "--json", model], capture_output=True, text=True, check=True).stdout
    types = {}
    for t in json.loads(out)["tensors"]:
        if len(t["shape"]) == 2:
            types[t["type"]] = types.get(t["type"], 0) + t["bytes"]
    return types


def median(xs):
    xs = list(xs)
    return statistics.median(xs) if xs else None


def cmdline(argv):
    """argv as a shell line, paths relative to the repository."""
    def q(a):
        a = os.path.relpath(a, ROOT) if a.startswith(ROOT + "/") else a
        return a if a and all(c.isalnum() or c in "-_./=,:" for c in a) else "'" + a.replace("'", "'\\''") + "'"
    return " ".join(q(a) for a in argv)


HISTORY = "history"        # under the results folder: the previous committed result per CPU family


def _committed(path):
    """Whether path is tracked by git and unchanged since the last commit."""
    rel = os.path.relpath(path, ROOT)
    tracked = subprocess.run(["git", "ls-files", "--error-unmatch", rel], cwd=ROOT, capture_output=True).returncode == 0
    return tracked and subprocess.run(["git", "diff", "--quiet", "HEAD", "--", rel], cwd=ROOT).returncode == 0


def keep_previous(path, results=None):
    """Before the result file `path` is overwritten: if it is committed as it is, keep it as
    the previous result of its CPU family in RESULTS/history/NAME ({cpu_family: result}, the
    latest per family), which render_bench.py shows beside the new figures. A file from
    before CPU families were recorded, or one not committed yet (a second run before the
    commit), is not kept."""
    results = results or os.path.dirname(path)
    if not os.path.exists(path) or not _committed(path):
        return
    try:
        old = json.load(open(path))
    except ValueError:
        return
    fam = old.get("machine", {}).get("cpu_family")
    if not fam:
        return
    hpath = os.path.join(results, HISTORY, os.path.basename(path))
    hist = json.load(open(hpath)) if os.path.exists(hpath) else {}
    hist[fam] = old
    os.makedirs(os.path.dirname(hpath), exist_ok=True)
    with open(hpath, "w") as f:
        json.dump(hist, f, indent=1)
        f.write("\n")


def write(name, res, history=True):
    """Write bench/results/NAME whole; history=False for results that are counts, not speed
    (decoding quality), which have no previous figure to show beside them."""
    os.makedirs(RESULTS, exist_ok=True)
    res["load_avg_at_end"] = loadavg()
    path = os.path.join(RESULTS, name)
    if history:
        keep_previous(path)
    # written beside it and renamed over it: an interrupted write never leaves half a file
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)
    return path


if __name__ == "__main__":
    # `python3 bench/benchlib.py peer`: the peer's description, for tools/check-peer.sh
    if sys.argv[1:] != ["peer"]:
        sys.exit("usage: benchlib.py peer")
    print(peer_description())

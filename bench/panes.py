#!/usr/bin/env python3
"""panes.py: the memory of compare panes that share one model (issue 30, point 4).

Runs `unmask record --compare` with 1, 2 and 4 panes (the main run and 0, 1, 3 --compare runs,
each pane with its own seed) on one model and the same decoding flags, and records each run's
peak resident set (/usr/bin/time) and wall time, alternating the pane counts over the rounds
and keeping the medians. Every pane after the first shares the first one's model (one set of
repacked weights, one thread pool: engine_open_sharing); a pane of its own adds its canvas,
logits rows, K/V caches and history. The ratio of 4 panes to 1 is the figure issue 30 sets a
target for (at most 1.15x one pane, plus the caches).

record decodes each run in its own thread on the one model, and the passes the runs plan at
once run as one (forward_run_multi: each weight read once for all the panes' rows), so a
lock-step of N panes costs less than N steps of one: "decode" is record's own time from the
model loaded to the file written (its "recorded ... in S s"), and its ratio to one pane's is
the figure issue 30 sets a target for with --cache dual in every pane (at most 2x for 4 panes).

usage: python3 bench/panes.py MODEL NAME [--threads 2] [--rounds 3] [--flags "--gen 32 --steps 4"]
writes bench/results/panes-NAME-tT.json (after make)
"""
import argparse, os, re, shlex, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402

PANES = [1, 2, 4]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("name")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--flags", default="--gen 32 --steps 4 --block 32 --cache dual",
                    help="decoding flags of every pane (default: %(default)s)")
    ap.add_argument("--prompt", default="Once upon a time")
    a = ap.parse_args()
    flags = shlex.split(a.flags)
    res = B.header("panes")
    res.update({"model": os.path.relpath(os.path.abspath(a.model), B.ROOT), "threads": a.threads,
                "rounds": a.rounds, "flags": a.flags, "panes": {}})
    runs = {n: [] for n in PANES}
    with tempfile.TemporaryDirectory() as d:
        for r in range(a.rounds):
            for n in (PANES if r % 2 == 0 else PANES[::-1]):
                argv = [B.UNMASK, "record", "-m", a.model, "-t", str(a.threads), "-p", a.prompt,
                        "--gif", os.path.join(d, "p.gif"), "--seed", "1"] + flags
                for k in range(1, n):
                    argv += ["--compare", f"--seed {k + 1}"]
                t = B.timed(argv)
                if t["rc"] != 0:
                    sys.exit(f"panes.py: {B.cmdline(argv)} failed (rc {t['rc']}): {t['stderr'][-400:]}")
                m = re.search(r"recorded \d+ steps in ([0-9.]+) s", t["stderr"])
                if not m:
                    sys.exit(f"panes.py: no 'recorded ... in S s' line from {B.cmdline(argv)}")
                runs[n].append({"peak_rss_kb": t["peak_rss_kb"], "wall_s": t["wall_s"], "decode_s": float(m.group(1)),
                                "load_before": t["load_before"]})
                if r == 0:
                    res["panes"].setdefault(str(n), {})["command"] = B.cmdline(argv)
    one = B.median(x["peak_rss_kb"] for x in runs[1])
    one_s = B.median(x["decode_s"] for x in runs[1])
    for n in PANES:
        rss = B.median(x["peak_rss_kb"] for x in runs[n])
        dec = B.median(x["decode_s"] for x in runs[n])
        res["panes"][str(n)].update({"runs": runs[n], "peak_rss_kb": rss, "wall_s": B.median(x["wall_s"] for x in runs[n]),
                                     "decode_s": dec, "rss_vs_one": round(rss / one, 3),
                                     "decode_vs_one": round(dec / one_s, 3) if one_s else None})
    res["model_bytes"] = os.path.getsize(a.model)
    res["rss_4_vs_1"] = res["panes"]["4"]["rss_vs_one"]
    res["decode_4_vs_1"] = res["panes"]["4"]["decode_vs_one"]
    B.finish(res, f"panes-{a.name}-t{a.threads}.json", ["rss_4_vs_1", "decode_4_vs_1"])


if __name__ == "__main__":
    main()

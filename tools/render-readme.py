#!/usr/bin/env python3
"""render-readme.py: render the result tables of README.md, docs/sudoku.md, docs/decoding.md and docs/perf.md from the
committed files under bench/results/. Each table sits between `<!-- BEGIN name -->` and `<!-- END name -->`;
a renderer per name turns the JSON into Markdown. With --check nothing is written and the
exit status is 1 when a file differs from what the results say (make test runs this), so
no figure in the README is ever typed by hand.
"""
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from benchlib import COMMITTED as RES, load_json  # noqa: E402


def load(name):
    return load_json(RES, name)


def _logit_rows(results, second, label, gate):
    """The table of a logits comparison against llama.cpp: one row per result, its first columns
    label(r) and the `second` column's value, then the cosines, argmax agreement, largest
    difference and gate(r)."""
    out = [f"| model | {second[0]} | rows | min cosine | mean cosine | argmax agreement | max abs diff | gate |",
           "|---|---|---:|---:|---:|---:|---:|---|"]
    for r in results:
        c = r["compare"]
        out.append(f"| {label(r)} | {r[second[1]]} | {c['rows']} | {c['cos_min']:.7f} | {c['cos_mean']:.7f} | "
                   f"{100 * c['argmax_agree']:.1f}% | {c['max_abs_diff']:.4g} | {gate(r)} |")
    return out


def render_check_peer():
    d = load("check-peer.json")
    if not d:
        return "_no results yet: run `make check-peer`_"
    return "\n".join([f"Peer: {d['peer']}; {d['machine']}, {d['threads']} threads, {d['date']}. "
                      "Same file, same 64-token canvas (24 prompt ids + 40 masks), every row's logits.", ""] +
                     _logit_rows(d["results"], ("weights", "type"), lambda r: r["model"],
                                 lambda r: ("cos >= 0.9999, argmax >= 99%: " + r["status"]) if r["gated"] else "reported"))


def render_check_peer_bundled():
    d = load("check-peer-bundled.json")
    if not d:
        return "_no results yet: run `make check-peer` (tools/check-peer-bundled.sh)_"
    g = d["gate"]
    return "\n".join([f"Peer: {d['peer']}; {d['machine']}, {d['threads']} threads, {d['date']}, unmask commit "
                      f"{d['unmask_commit']}. The bundled files as shipped (F16 matrices), every row's logits; gate: "
                      f"min cosine >= {g['min_cos']}, argmax agreement >= {100 * g['min_argmax']:.0f}%.", ""] +
                     _logit_rows(d["results"], ("canvas", "canvas"),
                                 lambda r: r["model"] + (f" ({r['name']})" if r.get("name") else ""),
                                 lambda r: r["status"]))


RENDERERS = {
    "check-peer": render_check_peer,
    "check-peer-bundled": render_check_peer_bundled,
}


def extra_renderers():
    """bench/render_*.py may add renderers: each defines RENDERERS = {name: fn}."""
    import importlib.util
    bench = os.path.join(ROOT, "bench")
    for fn in sorted(os.listdir(bench)):
        if fn.startswith("render_") and fn.endswith(".py"):
            spec = importlib.util.spec_from_file_location(fn[:-3], os.path.join(bench, fn))
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            RENDERERS.update(getattr(mod, "RENDERERS", {}))


def render(text):
    def sub(m):
        name = m.group(1)
        if name not in RENDERERS:
            raise SystemExit(f"render-readme: no renderer for table '{name}'")
        return f"<!-- BEGIN {name} -->\n{RENDERERS[name]()}\n<!-- END {name} -->"
    return re.sub(r"<!-- BEGIN ([a-z0-9-]+) -->\n.*?<!-- END \1 -->", sub, text, flags=re.S)


# the files whose tables are rendered
FILES = ["README.md", "docs/sudoku.md", "docs/decoding.md", "docs/perf.md"]


def main():
    extra_renderers()
    rc = 0
    for name in FILES:
        path = os.path.join(ROOT, name)
        if not os.path.exists(path):
            continue
        with open(path) as f:
            old = f.read()
        new = render(old)
        if "--check" in sys.argv:
            if new != old:
                print(f"{name} is out of step with bench/results/: run tools/render-readme.py", file=sys.stderr)
                rc = 1
        elif new != old:
            with open(path, "w") as f:
                f.write(new)
    return rc


if __name__ == "__main__":
    sys.exit(main())

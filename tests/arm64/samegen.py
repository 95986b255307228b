#!/usr/bin/env python3
"""samegen.py: the AArch64 build generates what the x86 build generates (make test-arm64).

    samegen.py X86_BIN ARM_BIN     run each case below with both binaries and compare
    samegen.py --self-test         check the comparison rule on made-up runs

The rule. Each case is a greedy generation (--temp 0, one position committed per step,
confidence order) written with --json: per step, the committed (position, token) and its
confidence c, the model's probability of that token. The two runs must commit the same
(position, token) at every step, with confidences within TIE of each other, up to the end
or up to the first step where they commit something else. At that step both runs start
from the same state (every earlier commit was the same), so their logits differ only by
rounding; if x86 picked (p, a) with confidence c and ARM picked (q, b) with c', then ARM
scores p's best at about c and, having picked q, has c' >= about c, and x86, having picked p,
has c >= about c': |c - c'| stays within the rounding, TIE. So a first difference with
|c - c'| <= TIE is a near-tie (two candidates within rounding of each other): the runs
may part there, and nothing after it is compared. A first difference with |c - c'| > TIE,
a confidence off by more than TIE at an agreed step, or different answers with every step
agreed, fails.

TIE = 0.005 (probability, absolute). Measured here: the confidences of the x86 build
(AVX-512 kernels) and the AArch64 build under QEMU agree within about 1.1e-3 on the demo
model; rounding alone (the int8 activations are the same on both) stays well below 5e-3,
while a wrong kernel moves them by far more.
Ends with "samegen: N passed, N failed, N skipped".
"""
import json
import os
import subprocess
import sys

TIE = 0.005

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def sudoku_prompt():
    sec = False
    for line in open(os.path.join(ROOT, "models.conf")):
        line = line.strip()
        if line.startswith("["):
            sec = line == "[sudoku]"
        elif sec and line.startswith("prompt"):
            return line.split("=", 1)[1].strip()
    return None


def cases():
    demo = ["-m", "models/unmask-demo.gguf", "--no-chat", "--gen", "32", "--steps", "32", "--block", "32"]
    out = [("demo model, 2 threads", demo + ["-p", "Once upon a time", "-t", "2"])]
    puzzle = sudoku_prompt()
    if puzzle:
        out.append(("sudoku model, preset puzzle", ["-M", "sudoku", "-p", puzzle, "-t", "1"]))
    common = ["--temp", "0", "--alg", "confidence", "--json", "-q"]
    return [(name, args + common) for name, args in out]


def compare(x, a):
    """(ok, message) for two --json results, by the rule above."""
    sx, sa = x.get("steps", []), a.get("steps", [])
    for i, (px, pa) in enumerate(zip(sx, sa)):
        cx, ca = px.get("commits", []), pa.get("commits", [])
        if len(cx) != 1 or len(ca) != 1:
            return False, f"step {i + 1}: {len(cx)} and {len(ca)} commits (the rule needs one per step)"
        kx, ka = (cx[0]["pos"], cx[0]["token"]), (ca[0]["pos"], ca[0]["token"])
        d = abs(cx[0]["conf"] - ca[0]["conf"])
        if kx != ka:
            if d <= TIE:
                return True, (f"same for {i} steps, then a near-tie at step {i + 1}: x86 (pos {kx[0]}, token {kx[1]}) "
                              f"{cx[0]['conf']:.6f}, arm (pos {ka[0]}, token {ka[1]}) {ca[0]['conf']:.6f}")
            return False, (f"step {i + 1}: x86 commits (pos {kx[0]}, token {kx[1]}) at {cx[0]['conf']:.6f}, arm "
                           f"(pos {ka[0]}, token {ka[1]}) at {ca[0]['conf']:.6f}: {d:.2g} apart, not a near-tie")
        if d > TIE:
            return False, f"step {i + 1}: same commit, confidences {cx[0]['conf']:.6f} and {ca[0]['conf']:.6f} ({d:.2g} > {TIE})"
    if len(sx) != len(sa):
        return False, f"{len(sx)} steps on x86, {len(sa)} on arm"
    if x.get("answer") != a.get("answer"):
        return False, "every step agrees but the answers differ"
    worst = max([abs(p["commits"][0]["conf"] - q["commits"][0]["conf"]) for p, q in zip(sx, sa)] or [0.0])
    return True, f"same text, all {len(sx)} steps (largest confidence difference {worst:.2g})"


def self_test():
    def run(*steps, answer="x"):
        return {"answer": answer, "steps": [{"commits": [{"pos": p, "token": t, "conf": c}]} for p, t, c in steps]}
    base = run((3, 10, 0.50), (4, 11, 0.90))
    checks = [
        ("identical runs agree", base, base, True),
        ("rounding-size confidence differences agree", base, run((3, 10, 0.501), (4, 11, 0.899)), True),
        ("a near-tie at the first difference is allowed", base, run((5, 12, 0.502), (6, 1, 0.2), answer="y"), True),
        ("a first difference that is no tie fails", base, run((5, 12, 0.60), (4, 11, 0.90)), False),
        ("a confidence off at an agreed step fails", base, run((3, 10, 0.50), (4, 11, 0.95)), False),
        ("a later difference is judged at the first one", base, run((3, 10, 0.50), (4, 12, 0.70)), False),
        ("a different step count fails", base, run((3, 10, 0.50)), False),
        ("different answers after the same steps fail", base, run((3, 10, 0.50), (4, 11, 0.90), answer="y"), False),
        ("several commits per step are refused", base,
         {"answer": "x", "steps": [{"commits": [{"pos": 3, "token": 10, "conf": 0.5}, {"pos": 4, "token": 11, "conf": 0.9}]}]},
         False),
    ]
    n_ok = n_bad = 0
    for name, x, a, want in checks:
        got, msg = compare(x, a)
        if got == want:
            print(f"ok   rule: {name}")
            n_ok += 1
        else:
            print(f"FAIL rule: {name}: got {got} ({msg})")
            n_bad += 1
    return n_ok, n_bad


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--self-test":
        n_ok, n_bad = self_test()
        print(f"samegen-rule: {n_ok} passed, {n_bad} failed, 0 skipped")
        return 1 if n_bad else 0
    if len(sys.argv) != 3:
        print("usage: samegen.py X86_BIN ARM_BIN | --self-test", file=sys.stderr)
        return 2
    x86, arm = sys.argv[1], sys.argv[2]
    n_ok, n_bad = self_test()
    for name, args in cases():
        res = []
        for b in (x86, arm):
            p = subprocess.run([b, "generate"] + args, cwd=ROOT, capture_output=True, text=True)
            if p.returncode != 0:
                res.append(f"{b}: exit {p.returncode}: {p.stderr.strip()[:300]}")
                continue
            try:
                res.append(json.loads(p.stdout))
            except ValueError as e:
                res.append(f"{b}: bad JSON: {e}")
        errs = [r for r in res if isinstance(r, str)]
        if errs:
            print(f"FAIL {name}\n    " + "\n    ".join(errs))
            n_bad += 1
            continue
        ok, msg = compare(res[0], res[1])
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {msg}")
        if not ok:
            print(f"    x86: {res[0].get('answer')!r}\n    arm: {res[1].get('answer')!r}")
        n_ok += ok
        n_bad += not ok
    print(f"samegen: {n_ok} passed, {n_bad} failed, 0 skipped")
    return 1 if n_bad else 0


if __name__ == "__main__":
    sys.exit(main())

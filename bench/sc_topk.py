#!/usr/bin/env python3
"""sc_topk.py: how close top-k self-conditioning and the BF16 product come to the exact float
product (issue 28, point 3).

DiffusionGemma feeds each step the previous step's distribution of every canvas row through the
soft embedding softmax(z / t) @ token_embd (llama.cpp's dg_canvas_embed). unmask computes it
exactly (--sc, a pass over the whole vocabulary per row: 256 x 262144 x 2816 = 189 G multiply-adds
per step on the 26B) or from each row's k largest probabilities plus the rest of the mass spread
evenly over the other tokens (--sc-topk K: k + 1 embedding rows per row, the column sum of the
embedding computed once). This script measures the agreement on random-weight models written by
`unmask synth`: the previous logits are the model's own first-step logits (a random canvas, no
self-conditioning), at the sampler's first and last temperatures (t_max 0.8, t_min 0.4); for each
k it compares the next pass's canvas logits with top-k against exact self-conditioning (row
cosine, argmax agreement), and reports the probability mass the k entries hold. A random model is
not a trained one: its distributions are what they are (reported), so the numbers bound the
approximation on these models, not on the real checkpoint.

usage: python3 bench/sc_topk.py [--out bench/results/sc-topk.json]   (after make)
"""
import array, json, math, os, subprocess, sys, tempfile

U = os.path.abspath("unmask")
KS = [8, 32, 128, 512, 2048]
AUTO_KS = [64, 256]                     # --sc-mode auto: top-k where the tail holds <= 0.001, else exact
TEMPS = [0.8, 0.4]


def load(path, V):
    a = array.array("f")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    return [a[r * V:(r + 1) * V] for r in range(len(a) // V)]


def cos(a, b):
    ab = sum(x * y for x, y in zip(a, b))
    return ab / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def argmax(a):
    return max(range(len(a)), key=a.__getitem__)


def kept_mass(z, t, k):
    m = max(z)
    e = sorted((math.exp((x - m) / t) for x in z), reverse=True)
    return sum(e[:k]) / sum(e)


def run(*args):
    subprocess.run([U, *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def measure(shape, V, d):
    model = os.path.join(d, shape + ".gguf")
    run("synth", "--shape", shape, "--seed", "7", "-o", model)
    P, C = 8, 16
    toks = ",".join(str((i * 7919 + 13) % V) for i in range(P + C))
    first = os.path.join(d, "first.f32")
    run("logits", "-m", model, "--tokens", toks, "--out", first, "-t", "2")
    prev = os.path.join(d, "prev.f32")
    with open(first, "rb") as f, open(prev, "wb") as g:
        f.seek(P * V * 4)
        g.write(f.read())
    prev_rows = load(prev, V)
    rows = []
    for t in TEMPS:
        exact = os.path.join(d, "exact.f32")
        run("logits", "-m", model, "--tokens", toks, "--out", exact, "--sc", prev, "--sc-temp", str(t), "-t", "2")
        ex = load(exact, V)[P:]
        for k in KS:
            if k >= V:
                continue
            tk = os.path.join(d, "topk.f32")
            run("logits", "-m", model, "--tokens", toks, "--out", tk, "--sc", prev, "--sc-temp", str(t), "--sc-mode", "topk", "--sc-topk", str(k), "-t", "2")
            tr = load(tk, V)[P:]
            cs = [cos(a, b) for a, b in zip(ex, tr)]
            ms = [kept_mass(z, t, k) for z in prev_rows]
            rows.append({"shape": shape, "n_vocab": V, "temp": t, "mode": "topk", "k": k, "cos_min": min(cs), "cos_mean": sum(cs) / len(cs),
                         "argmax_agree": sum(argmax(a) == argmax(b) for a, b in zip(ex, tr)) / len(ex),
                         "kept_mass_min": min(ms), "kept_mass_mean": sum(ms) / len(ms)})
            r = rows[-1]
            print("%-26s t=%.1f k=%5d  kept mass min %.4f mean %.4f  logits cosine min %.6f mean %.6f  argmax %.3f"
                  % (shape, t, k, r["kept_mass_min"], r["kept_mass_mean"], r["cos_min"], r["cos_mean"], r["argmax_agree"]))
        # the exact product from BF16 values (--sc-product bf16): every row, same blocks
        bf = os.path.join(d, "bf16.f32")
        run("logits", "-m", model, "--tokens", toks, "--out", bf, "--sc", prev, "--sc-temp", str(t), "--sc-product", "bf16", "-t", "2")
        br = load(bf, V)[P:]
        cs = [cos(a, b) for a, b in zip(ex, br)]
        rows.append({"shape": shape, "n_vocab": V, "temp": t, "mode": "bf16", "cos_min": min(cs), "cos_mean": sum(cs) / len(cs),
                     "argmax_agree": sum(argmax(a) == argmax(b) for a, b in zip(ex, br)) / len(ex)})
        r = rows[-1]
        print("%-26s t=%.1f bf16 product       logits cosine min %.6f mean %.6f  argmax %.3f"
              % (shape, t, r["cos_min"], r["cos_mean"], r["argmax_agree"]))
        for k in AUTO_KS:
            au = os.path.join(d, "auto.f32")
            run("logits", "-m", model, "--tokens", toks, "--out", au, "--sc", prev, "--sc-temp", str(t), "--sc-mode", "auto",
                "--sc-topk", str(k), "-t", "2")
            ar = load(au, V)[P:]
            cs = [cos(a, b) for a, b in zip(ex, ar)]
            n_exact = sum(1 - kept_mass(z, t, k) > 1e-3 for z in prev_rows)
            rows.append({"shape": shape, "n_vocab": V, "temp": t, "mode": "auto", "k": k, "cos_min": min(cs),
                         "cos_mean": sum(cs) / len(cs), "argmax_agree": sum(argmax(a) == argmax(b) for a, b in zip(ex, ar)) / len(ex),
                         "rows_exact": n_exact, "rows": len(prev_rows)})
            r = rows[-1]
            print("%-26s t=%.1f auto k=%4d  rows exact %2d/%d  logits cosine min %.6f mean %.6f  argmax %.3f"
                  % (shape, t, k, n_exact, len(prev_rows), r["cos_min"], r["cos_mean"], r["argmax_agree"]))
    return rows


def main():
    out = "bench/results/sc-topk.json"
    if len(sys.argv) == 3 and sys.argv[1] == "--out":
        out = sys.argv[2]
    with tempfile.TemporaryDirectory() as d:
        rows = measure("tiny-diffusion-gemma", 1024, d) + measure("tiny-diffusion-gemma-262k", 262144, d)
    res = {"what": "top-k, auto and the bf16 product vs exact (f32) self-conditioning: next-pass canvas logits (8-token prompt, 16-token canvas), "
                   "previous logits = the model's own first-step logits", "results": rows}
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    print("wrote", out)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Make tests/data/quant/*: quantized tensors and expected values produced by llama.cpp.

Everything expected here comes from llama.cpp, never from unmask:
  - quantized bytes: llama-quantize --pure on a small F32 GGUF (the exact tool users run),
    cross-checked against ggml_quantize_chunk called through ctypes;
  - expected dequantized floats: gguf-py's numpy dequantizers (an implementation separate
    from the C one), cross-checked bit for bit against ggml's dequantize_row_* via ctypes;
  - activation formats (Q8_0/Q8_1/Q8_K) and fp16/bf16 conversions: ggml's C reference via ctypes;
  - mixtures.txt: the per-tensor types llama-quantize picks for each mixture name.

Needs the peer build (PEER=/work/main/build/peer by default) and Debian's python3-numpy.
Usage: tools/make-quant-fixtures.sh  (runs this with /usr/bin/python3)
"""
import ctypes, os, struct, subprocess, sys, tempfile
import numpy as np

PEER = os.environ.get("PEER", "/work/main/build/peer")
OUT = sys.argv[1] if len(sys.argv) > 1 else "tests/data/quant"
sys.path.insert(0, os.path.join(PEER, "src/gguf-py"))
import gguf  # noqa: E402
from gguf import quants  # noqa: E402

QUANTIZE = os.path.join(PEER, "bin/llama-quantize")
base = ctypes.CDLL(os.path.join(PEER, "lib/libggml-base.so"))
T = gguf.GGMLQuantizationType

# ggml type id -> (llama-quantize ftype name used with --pure, gguf-py type)
TYPES = {
    "f16": ("F16", T.F16), "bf16": ("BF16", T.BF16),
    "q4_0": ("Q4_0", T.Q4_0), "q4_1": ("Q4_1", T.Q4_1), "q5_0": ("Q5_0", T.Q5_0),
    "q5_1": ("Q5_1", T.Q5_1), "q8_0": ("Q8_0", T.Q8_0),
    "q2_K": ("Q2_K", T.Q2_K), "q3_K": ("Q3_K_S", T.Q3_K), "q4_K": ("Q4_K_S", T.Q4_K),
    "q5_K": ("Q5_K_S", T.Q5_K), "q6_K": ("Q6_K", T.Q6_K),
    "iq4_nl": ("IQ4_NL", T.IQ4_NL), "iq4_xs": ("IQ4_XS", T.IQ4_XS),
}
# byte offsets of fp16 fields inside one block (sanitized in random blocks so no inf/nan)
HALF_FIELDS = {
    "q4_0": [0], "q4_1": [0, 2], "q5_0": [0], "q5_1": [0, 2], "q8_0": [0],
    "q2_K": [80, 82], "q3_K": [108], "q4_K": [0, 2], "q5_K": [0, 2], "q6_K": [208],
    "iq4_nl": [0], "iq4_xs": [0],
}

NE0, NROWS = 512, 5


def make_input():
    """Weight-like rows plus the corner cases quantizers branch on."""
    rng = np.random.RandomState(20261129)
    x = (rng.randn(NROWS, NE0) * 0.02).astype(np.float32)
    x[0, 5] = 0.31; x[0, 300] = -0.27                        # outliers
    x[1, 0:32] = 0.0                                         # all-zero 32-block
    x[1, 32:64] = 0.0125                                     # constant block (min == max)
    x[1, 64:96] = -np.abs(x[1, 64:96])                       # all negative
    x[1, 96:128] = np.abs(x[1, 96:128]) + 0.01               # all positive, no zero
    x[1, 256:512] = rng.uniform(-1, 1, 256).astype(np.float32) * np.linspace(1e-4, 3, 256, dtype=np.float32)
    x[2, 0:256] = 0.0                                        # all-zero super-block
    x[2, 256:512] = (rng.standard_t(3, 256) * 0.05).astype(np.float32)   # heavy tails
    x[3] = rng.uniform(-1, 1, NE0).astype(np.float32)        # uniform: the IQ4 scale search differs most
    x[4] = (rng.randn(NE0) * 0.5 + 0.3).astype(np.float32)   # offset Gaussian, one sign dominates
    return x


def write_gguf(path, tensors, arch="llada", hp=None):
    w = gguf.GGUFWriter(path, arch)
    hp = hp or {}
    w.add_context_length(64)
    w.add_embedding_length(hp.get("n_embd", NE0))
    w.add_block_count(hp.get("n_layer", 1))
    w.add_feed_forward_length(hp.get("n_ff", NE0))
    w.add_head_count(hp.get("n_head", 4))
    w.add_head_count_kv(hp.get("n_head_kv", 4))
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(0)
    if hp.get("n_expert"):
        w.add_expert_count(hp["n_expert"]); w.add_expert_used_count(2)
        w.add_rope_dimension_count(64)
    for name, arr in tensors:
        w.add_tensor(name, arr)
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()


def run_quantize(src, dst, ftype, pure):
    cmd = [QUANTIZE] + (["--pure"] if pure else []) + [src, dst, ftype, "1"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("llama-quantize failed: %s\n%s" % (" ".join(cmd), r.stderr[-2000:]))


def ggml_quantize_chunk(type_id, x):
    n = x.size
    x = np.ascontiguousarray(x, dtype=np.float32)
    dst = ctypes.create_string_buffer(n * 8 + 4096)
    f = base.ggml_quantize_chunk
    f.restype = ctypes.c_size_t
    f.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    size = f(type_id, x.ctypes.data, dst, 0, x.shape[0], x.shape[1], None)
    return dst.raw[:size]


def ggml_dequant(name, data, n):
    """ggml's own dequantize_row_<name>, for cross-checking gguf-py."""
    out = np.zeros(n, dtype=np.float32)
    buf = ctypes.create_string_buffer(bytes(data), len(data))
    if name == "f16":
        f = base.ggml_fp16_to_fp32_row
    elif name == "bf16":
        f = base.ggml_bf16_to_fp32_row
    else:
        f = getattr(base, "dequantize_row_" + name)
    f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    f(buf, out.ctypes.data, n)
    return out


def type_size(qt):
    blck, size = gguf.GGML_QUANT_SIZES[qt]
    return blck, size


def random_blocks(name, qt, n_elems, rng):
    blck, size = type_size(qt)
    nb = n_elems // blck
    raw = bytearray(rng.randint(0, 256, nb * size, dtype=np.uint8).tobytes())
    if name in ("f16", "bf16"):
        for i in range(0, len(raw), 2):
            raw[i + 1] &= 0xBF                                # exponent < max: no inf/nan
    for b in range(nb):
        for off in HALF_FIELDS.get(name, []):
            raw[b * size + off + 1] &= 0xBF                   # |half| < 2: finite scales
    return bytes(raw)


def gguf_py_dequant(qt, data, n):
    arr = np.frombuffer(data, dtype=np.uint8).reshape(1, -1)
    if qt == T.F16:
        return np.frombuffer(data, dtype=np.float16).astype(np.float32)
    return quants.dequantize(arr, qt).reshape(-1).astype(np.float32)


def same_bits(a, b):
    return a.view(np.uint32).tobytes() == b.view(np.uint32).tobytes()


def write_fixture(path, type_id, qa, ea, qb, eb):
    with open(path, "wb") as f:
        f.write(b"UMQ1" + struct.pack("<IIIII", type_id, ea.size, len(qa), eb.size, len(qb)))
        f.write(qa); f.write(ea.astype("<f4").tobytes())
        f.write(qb); f.write(eb.astype("<f4").tobytes())


def weight_fixtures(tmp, x):
    src = os.path.join(tmp, "in.gguf")
    write_gguf(src, [("blk.0.attn_q.weight", x)])
    rng = np.random.RandomState(7)
    report = []
    for name, (ftype, qt) in TYPES.items():
        dst = os.path.join(tmp, name + ".gguf")
        run_quantize(src, dst, ftype, pure=True)
        t = [t for t in gguf.GGUFReader(dst).tensors if t.name == "blk.0.attn_q.weight"][0]
        assert int(t.tensor_type) == int(qt), (name, t.tensor_type)
        qa = bytes(np.asarray(t.data).tobytes())
        if qa != ggml_quantize_chunk(int(qt), x):
            sys.exit("%s: llama-quantize bytes differ from ggml_quantize_chunk" % name)
        ea = gguf_py_dequant(qt, qa, x.size) if qt != T.BF16 else quants.dequantize(np.frombuffer(qa, dtype=np.uint8).reshape(1, -1), qt).reshape(-1)
        n_rand = 1024 if type_size(qt)[0] == 256 else 512
        qb = random_blocks(name, qt, n_rand, rng)
        eb = gguf_py_dequant(qt, qb, n_rand) if qt != T.BF16 else quants.dequantize(np.frombuffer(qb, dtype=np.uint8).reshape(1, -1), qt).reshape(-1)
        ok_a = same_bits(ea, ggml_dequant(name, qa, x.size))
        ok_b = same_bits(eb, ggml_dequant(name, qb, n_rand))
        report.append("%-7s gguf-py == ggml dequant: quantized %s, random %s" % (name, ok_a, ok_b))
        if not (ok_a and ok_b):
            sys.exit("gguf-py and ggml disagree on %s; not writing a fixture" % name)
        write_fixture(os.path.join(OUT, name + ".bin"), int(qt), qa, ea, qb, eb)
    return report


def activation_fixtures(x):
    """Q8_0 / Q8_1 / Q8_K activations from ggml's quantize_row_*_ref."""
    n = x.size
    xs = np.ascontiguousarray(x.reshape(-1))
    out = {}
    for name, tid, blck, size in (("q8_1", 9, 32, 36), ("q8_K", 15, 256, 292)):
        buf = ctypes.create_string_buffer(n // blck * size)
        f = getattr(base, "quantize_row_%s_ref" % name)
        f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
        f(xs.ctypes.data, buf, n)
        q = buf.raw
        if name == "q8_K":
            e = ggml_dequant("q8_K", q, n)
        else:
            blocks = np.frombuffer(q, dtype=np.uint8).reshape(-1, size)
            d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)
            qs = blocks[:, 4:].copy().view(np.int8).astype(np.float32)
            e = (qs * d).reshape(-1).astype(np.float32)
        write_fixture(os.path.join(OUT, name + ".bin"), tid, q, e, b"", np.zeros(0, np.float32))
        out[name] = len(q)
    return out


def conversion_fixture():
    """fp32 -> fp16 / bf16 bits from ggml for values that exercise rounding and ranges."""
    vals = [0.0, -0.0, 1.0, -1.0, 65504.0, 65519.99, 65520.0, 1e6, -1e6, 6.1035156e-05, 6.0e-08,
            2.9802322e-08, 2.9802326e-08, 1e-10, 1.0009765625, 1.00048828125, 1.00146484375,
            float("inf"), float("-inf"), float("nan"), 3.0e38, 1.17549435e-38, 1e-45,
            1.00390625, 1.005859375, 0.33333334, -2.7182817]
    rng = np.random.RandomState(3)
    v = np.concatenate([np.array(vals, dtype=np.float32),
                        (rng.randn(101) * np.exp(rng.uniform(-20, 12, 101))).astype(np.float32),
                        rng.randint(0, 2**32, 64, dtype=np.uint64).astype(np.uint32).view(np.float32)])
    n = v.size
    h = (ctypes.c_uint16 * n)(); b = (ctypes.c_uint16 * n)()
    base.ggml_fp32_to_fp16_row.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    base.ggml_fp32_to_bf16_row_ref.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    base.ggml_fp32_to_fp16_row(v.ctypes.data, h, n)
    base.ggml_fp32_to_bf16_row_ref(v.ctypes.data, b, n)
    with open(os.path.join(OUT, "conv.bin"), "wb") as f:
        f.write(b"UMCV" + struct.pack("<I", n))
        f.write(v.astype("<f4").tobytes())
        f.write(bytes(h)); f.write(bytes(b))


# ------------------------------------------------------------------ mixtures

MIXTURES = ["F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K_S", "Q3_K_M",
            "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K", "IQ4_NL", "IQ4_XS"]


def model_tensors(n_layer, n_embd, n_ff, n_vocab, n_head, n_head_kv, tied, extra, n_expert=0):
    rng = np.random.RandomState(11)
    head = n_embd // n_head
    r = lambda *s: (rng.randn(*s) * 0.02).astype(np.float32)
    t = [("token_embd.weight", r(n_vocab, n_embd)), ("output_norm.weight", np.ones(n_embd, np.float32))]
    if not tied:
        t.append(("output.weight", r(n_vocab, n_embd)))
    for i in range(n_layer):
        p = "blk.%d." % i
        t += [(p + "attn_norm.weight", np.ones(n_embd, np.float32)),
              (p + "attn_q.weight", r(n_embd, n_embd)),
              (p + "attn_k.weight", r(head * n_head_kv, n_embd)),
              (p + "attn_v.weight", r(head * n_head_kv, n_embd)),
              (p + "attn_output.weight", r(n_embd, n_embd)),
              (p + "ffn_norm.weight", np.ones(n_embd, np.float32))]
        if n_expert:
            t += [(p + "ffn_gate_inp.weight", r(n_expert, n_embd)),
                  (p + "ffn_gate_exps.weight", r(n_expert, n_ff, n_embd)),
                  (p + "ffn_up_exps.weight", r(n_expert, n_ff, n_embd)),
                  (p + "ffn_down_exps.weight", r(n_expert, n_embd, n_ff))]
        else:
            t += [(p + "ffn_gate.weight", r(n_ff, n_embd)),
                  (p + "ffn_up.weight", r(n_ff, n_embd)),
                  (p + "ffn_down.weight", r(n_embd, n_ff))]
    if extra:
        t.append(("blk.0.extra_proj.weight", r(8, 100)))      # ne0 = 100: no block fits -> F16
    return t


def mixture_fixture(tmp):
    models = {
        # name: (arch, n_layer, n_embd, n_ff, n_vocab, n_head, n_head_kv, tied, extra, n_expert)
        "A": ("llada", 12, 256, 288, 64, 4, 4, False, True, 0),  # MHA, untied head, ffn 288 (not a 256
                                                                 # multiple), > 10 layers (name order != layer order)
        "B": ("llada", 8, 256, 512, 64, 8, 2, True, False, 0),   # GQA 4, tied embeddings
        "C": ("llama", 4, 256, 128, 64, 4, 4, False, False, 8),  # 8 experts: the Mixtral rules
    }
    lines = ["# Per-tensor types chosen by llama-quantize (llama.cpp %s) for each mixture, on three"
             % open(os.path.join(PEER, "VERSION")).read().strip().replace("\n", " "),
             "# small models, two llada-shaped and one with 8 experts (source tensors f32). Made by tools/make-quant-fixtures.sh.",
             "# mixtures NAME...            the columns of the tensor lines",
             "# ftypes N...                 general.file_type llama-quantize wrote, per column",
             "# model NAME ARCH N_LAYER N_HEAD N_HEAD_KV N_EXPERT",
             "# tensor MODEL NAME N_DIMS NE0 NE1 NE2 TYPE...",
             "mixtures " + " ".join(MIXTURES)]
    ftypes = None
    for mname, (arch, nl, ne, nf, nv, nh, nkv, tied, extra, nexp) in models.items():
        tensors = model_tensors(nl, ne, nf, nv, nh, nkv, tied, extra, nexp)
        src = os.path.join(tmp, "model%s.gguf" % mname)
        write_gguf(src, tensors, arch=arch,
                   hp=dict(n_layer=nl, n_embd=ne, n_ff=nf, n_head=nh, n_head_kv=nkv, n_expert=nexp))
        got, ft = {}, []
        for mix in MIXTURES:
            dst = os.path.join(tmp, "model%s-%s.gguf" % (mname, mix))
            run_quantize(src, dst, mix, pure=False)
            rd = gguf.GGUFReader(dst)
            ft.append(int(rd.fields["general.file_type"].parts[-1][0]))
            for t in rd.tensors:
                got.setdefault(t.name, []).append(t.tensor_type.name.lower().replace("_k", "_K"))
        if ftypes is None:
            ftypes = ft
            lines.append("ftypes " + " ".join(str(f) for f in ft))
        lines.append("model %s %s %d %d %d %d" % (mname, arch, nl, nh, nkv, nexp))
        for name, arr in tensors:
            shape = list(reversed(arr.shape)) + [1] * (3 - arr.ndim)
            lines.append("tensor %s %s %d %d %d %d %s" % (mname, name, arr.ndim, shape[0], shape[1], shape[2],
                                                          " ".join(got[name])))
    with open(os.path.join(OUT, "mixtures.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def tiny_model_fixture(tmp):
    """tiny-f32.gguf (8 layers, rows of 256, two rows per matrix) and what llama-quantize
    makes of it as Q4_K_M and Q8_0: an end-to-end check of unmask quantize, byte for byte."""
    rng = np.random.RandomState(5)
    r = lambda *s: (rng.randn(*s) * 0.02).astype(np.float32)
    t = [("token_embd.weight", r(4, 256)), ("output_norm.weight", np.ones(256, np.float32)),
         ("output.weight", r(4, 256))]
    for i in range(8):
        p = "blk.%d." % i
        t += [(p + "attn_norm.weight", (1 + r(256)).astype(np.float32)),
              (p + "attn_v.weight", r(2, 256)), (p + "ffn_down.weight", r(2, 256))]
    src = os.path.join(OUT, "tiny-f32.gguf")
    write_gguf(src, t, hp=dict(n_layer=8, n_embd=256, n_ff=256, n_head=4, n_head_kv=4))
    for mix in ("Q4_K_M", "Q8_0"):
        run_quantize(src, os.path.join(OUT, "tiny-%s.gguf" % mix.lower()), mix, pure=False)


def synth_fixture(tmp):
    """synth.txt: sha256 of llama-quantize's output for models written by `unmask synth`
    (MoE, F16 and BF16 sources), with the input's sha256 so the test can tell whether synth
    still writes the same model. Needs ./unmask (UNMASK=path to override); skipped without it."""
    unmask = os.environ.get("UNMASK", "./unmask")
    if not os.access(unmask, os.X_OK):
        print("no %s: synth.txt not remade" % unmask)
        return
    import hashlib
    sha = lambda p: hashlib.sha256(open(p, "rb").read()).hexdigest()
    lines = ["# unmask synth model, source type, mixture, sha256 of the synth output, sha256 of what",
             "# llama-quantize (llama.cpp %s) makes of it. Made by tools/make-quant-fixtures.sh."
             % open(os.path.join(PEER, "VERSION")).read().strip().replace("\n", " ")]
    for shape, ty, mix in (("tiny-llada-moe", "f16", "Q4_K_M"), ("tiny-dream", "bf16", "Q5_K_M"),
                           ("tiny-rnd1", "f32", "IQ4_XS"), ("tiny-llada", "f16", "Q6_K")):
        src = os.path.join(tmp, "synth-%s-%s.gguf" % (shape, ty))
        subprocess.run([unmask, "synth", "--shape", shape, "--type", ty, "-o", src], check=True, capture_output=True)
        dst = os.path.join(tmp, "synth-out.gguf")
        run_quantize(src, dst, mix, pure=False)
        lines.append("%s %s %s %s %s" % (shape, ty, mix, sha(src), sha(dst)))
    with open(os.path.join(OUT, "synth.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    os.makedirs(OUT, exist_ok=True)
    x = make_input()
    x.astype("<f4").tofile(os.path.join(OUT, "input.f32"))
    with tempfile.TemporaryDirectory() as tmp:
        for line in weight_fixtures(tmp, x):
            print(line)
        activation_fixtures(x)
        conversion_fixture()
        mixture_fixture(tmp)
        tiny_model_fixture(tmp)
        synth_fixture(tmp)
    print("wrote", OUT)


if __name__ == "__main__":
    main()

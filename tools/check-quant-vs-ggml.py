#!/usr/bin/python3
"""Broad cross-check of src/format/quant.c against llama.cpp's ggml (the peer build), beyond the
committed fixtures: every quantizer on 8 value distributions (64 rows x 4096 each) against
ggml_quantize_chunk (what llama-quantize calls), the activation quantizers against
quantize_row_q8_1_ref / q8_K_ref, and every dequantizer on random blocks against
dequantize_row_*. Prints one line per type; exit status 1 on any difference.
Usage: tools/check-quant-vs-ggml.py [SEED]   (needs the peer and python3-numpy)
"""
import ctypes, os, subprocess, sys, tempfile
import numpy as np

PEER = os.environ.get("PEER", "/work/main/build/peer")
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
lib = os.path.join(tempfile.mkdtemp(), "libumquant.so")
subprocess.check_call(["cc", "-shared", "-fPIC", "-std=c11", "-D_GNU_SOURCE", "-O2", "-I" + root + "/src", "-o", lib]
                      + [os.path.join(root, "src", f) for f in ("quant.c", "quant_types.c", "util.c")] + ["-lm"])
base = ctypes.CDLL(os.path.join(PEER, "lib/libggml-base.so"))
um = ctypes.CDLL(lib)


class Traits(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("name", ctypes.c_char_p), ("blck", ctypes.c_uint32), ("bytes", ctypes.c_uint32),
                ("to_float", ctypes.c_void_p), ("from_float", ctypes.c_void_p), ("dot", ctypes.c_void_p),
                ("vec_dot_type", ctypes.c_int), ("is_quantized", ctypes.c_bool), ("is_activation", ctypes.c_bool)]


um.um_traits.restype = ctypes.POINTER(Traits)
ROWFN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
qc = base.ggml_quantize_chunk
qc.restype = ctypes.c_size_t
qc.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
rng = np.random.RandomState(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
NE0, NROW = 4096, 64
dists = {"gauss": rng.randn(NROW, NE0) * 0.02, "t2": rng.standard_t(2, (NROW, NE0)) * 0.01,
         "uniform": rng.uniform(-1, 1, (NROW, NE0)), "positive": np.abs(rng.randn(NROW, NE0)),
         "sparse": rng.randn(NROW, NE0) * (rng.rand(NROW, NE0) < 0.1), "laplace": rng.laplace(0, 0.03, (NROW, NE0)),
         "tiny": rng.randn(NROW, NE0) * 1e-6, "offset": rng.randn(NROW, NE0) * 0.01 + 0.05}
DEQ = {1: "ggml_fp16_to_fp32_row", 30: "ggml_bf16_to_fp32_row"}
failed = False
for tid in (1, 30, 2, 3, 6, 7, 8, 10, 11, 12, 13, 14, 20, 23):
    t = um.um_traits(tid).contents
    name = t.name.decode()
    bad = []
    for dn, x in dists.items():
        x = np.ascontiguousarray(x, dtype=np.float32)
        a = ctypes.create_string_buffer(x.size * 4); b = ctypes.create_string_buffer(x.size * 4)
        size = qc(tid, x.ctypes.data, a, 0, NROW, NE0, None)
        ROWFN(t.from_float)(x.ctypes.data, b, x.size)
        if a.raw[:size] != b.raw[:size]:
            bad.append("quantize/" + dn)
    nb = 4096
    raw = bytearray(rng.randint(0, 256, nb * t.bytes, dtype=np.uint8).tobytes())
    n = nb * t.blck
    ya = np.zeros(n, np.float32); yb = np.zeros(n, np.float32)
    f = getattr(base, DEQ.get(tid, "dequantize_row_" + name))
    f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    buf = ctypes.create_string_buffer(bytes(raw), len(raw))
    f(buf, ya.ctypes.data, n)
    ROWFN(t.to_float)(buf, yb.ctypes.data, n)
    if ya.view(np.uint32).tobytes() != yb.view(np.uint32).tobytes():
        bad.append("dequantize/random")
    print("%-7s %s" % (name, "same bytes and values as ggml" if not bad else "DIFFERS: " + ", ".join(bad)))
    failed |= bool(bad)
for tid, fn, sz in ((9, "quantize_row_q8_1_ref", 36), (15, "quantize_row_q8_K_ref", 292)):
    t = um.um_traits(tid).contents
    x = np.ascontiguousarray(np.concatenate([d.reshape(-1) for d in dists.values()]), dtype=np.float32)
    a = ctypes.create_string_buffer(x.size // t.blck * sz); b = ctypes.create_string_buffer(x.size // t.blck * sz)
    g = getattr(base, fn); g.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    g(x.ctypes.data, a, x.size)
    ROWFN(t.from_float)(x.ctypes.data, b, x.size)
    ok = a.raw == b.raw
    print("%-7s %s" % (t.name.decode(), "same bytes as ggml" if ok else "DIFFERS"))
    failed |= not ok
sys.exit(1 if failed else 0)

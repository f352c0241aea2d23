"""Writes a tiny BERT encoder in Hugging Face's layout and names
(BertModel's, as sentence-transformers stores all-MiniLM-L6-v2; also
rounded to bfloat16 and stored as BF16, tiny-bf16, and in two shards,
tiny-sharded:
embeddings.{word,position,token_type}_embeddings, embeddings.LayerNorm,
encoder.layer.N.{attention.self.{query,key,value},
attention.output.{dense,LayerNorm}, intermediate.dense,
output.{dense,LayerNorm}}, pooler.dense; the position_ids buffer), a
WordPiece tokenizer.json, and reference.json: the hidden states and the
sentence embeddings (mean pooling over the attention mask, then L2
normalisation, as sentence-transformers' Pooling and Normalize) of a
padded batch, computed in float64 by BertModel's forward written out in
torch from modeling_bert.py: absolute positions, token type 0, post-norm
layers, erf GELU, padded keys masked out. The texts' ids come from a
WordPiece written here (lower case, split on whitespace and punctuation,
the longest vocabulary piece first, ## continuations, [CLS] … [SEP]).
Run: python3 reference.py (Debian's python3-torch; make torch-reference)."""

import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../testdata"))
from hflayout import save  # noqa: E402

torch.manual_seed(0)
special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
words = ["the", "a", "go", "gopher", "runs", "run", "fast", "on", "every", "gpu", "model", "text", "is", "hello", "world",
         "we", "embed", "sentence", "##s", "##ing", "##er", "##ed", ",", ".", "!", "?"]
letters = list("abcdefghijklmnopqrstuvwxyz0123456789")
vocab = list(dict.fromkeys(special + words + letters + ["##" + c for c in letters]))
ids_of = {t: i for i, t in enumerate(vocab)}
cfg = {"model_type": "bert", "architectures": ["BertModel"], "vocab_size": len(vocab), "hidden_size": 16,
       "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 32, "hidden_act": "gelu",
       "max_position_embeddings": 32, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
       "position_embedding_type": "absolute", "pad_token_id": 0, "torch_dtype": "float32"}
V, E, L, H, I, P = (cfg[k] for k in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                                     "intermediate_size", "max_position_embeddings"))


def rnd(*shape, scale=0.3):
    return (torch.randn(*shape) * scale).float()


w = {"embeddings.word_embeddings.weight": rnd(V, E), "embeddings.position_embeddings.weight": rnd(P, E),
     "embeddings.token_type_embeddings.weight": rnd(2, E),
     "embeddings.LayerNorm.weight": 1 + rnd(E, scale=0.1), "embeddings.LayerNorm.bias": rnd(E, scale=0.1),
     "pooler.dense.weight": rnd(E, E), "pooler.dense.bias": rnd(E, scale=0.1)}
for i in range(L):
    p = f"encoder.layer.{i}."
    for n in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
        w[p + n + ".weight"], w[p + n + ".bias"] = rnd(E, E), rnd(E, scale=0.1)
    w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"] = rnd(I, E), rnd(I, scale=0.1)
    w[p + "output.dense.weight"], w[p + "output.dense.bias"] = rnd(E, I), rnd(E, scale=0.1)
    for n in ("attention.output.LayerNorm", "output.LayerNorm"):
        w[p + n + ".weight"], w[p + n + ".bias"] = 1 + rnd(E, scale=0.1), rnd(E, scale=0.1)


def wordpiece(text):
    out = [ids_of["[CLS]"]]
    text = text.lower()
    for word in "".join(f" {c} " if not c.isalnum() and not c.isspace() else c for c in text).split():
        start, pieces = 0, []
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in ids_of:
                    break
                end -= 1
            if end == start:
                pieces = [ids_of["[UNK]"]]
                break
            pieces.append(ids_of[piece])
            start = end
        out += pieces
    return out + [ids_of["[SEP]"]]


def forward(ids, mask):
    d = {k: v.double() for k, v in w.items()}
    B, T = ids.shape
    D = E // H
    ln = torch.nn.functional.layer_norm
    eps = cfg["layer_norm_eps"]

    def lin(x, n):
        return x @ d[n + ".weight"].T + d[n + ".bias"]

    x = d["embeddings.word_embeddings.weight"][ids] + d["embeddings.position_embeddings.weight"][torch.arange(T)] \
        + d["embeddings.token_type_embeddings.weight"][torch.zeros_like(ids)]
    x = ln(x, (E,), d["embeddings.LayerNorm.weight"], d["embeddings.LayerNorm.bias"], eps)
    add = (1.0 - mask[:, None, None, :].double()) * torch.finfo(torch.float64).min
    for i in range(L):
        p = f"encoder.layer.{i}."
        q, k, v = (lin(x, p + "attention.self." + n).view(B, T, H, D).transpose(1, 2) for n in ("query", "key", "value"))
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D) + add, dim=-1)
        o = (att @ v).transpose(1, 2).reshape(B, T, E)
        x = ln(lin(o, p + "attention.output.dense") + x, (E,), d[p + "attention.output.LayerNorm.weight"],
               d[p + "attention.output.LayerNorm.bias"], eps)
        h = torch.nn.functional.gelu(lin(x, p + "intermediate.dense"))
        x = ln(lin(h, p + "output.dense") + x, (E,), d[p + "output.LayerNorm.weight"], d[p + "output.LayerNorm.bias"], eps)
    return x


texts = ["Hello, world!", "The gopher runs fast on every GPU.", "We embed sentences.", "a"]
seqs = [wordpiece(t) for t in texts]
T = max(len(s) for s in seqs)
ids = torch.tensor([s + [0] * (T - len(s)) for s in seqs])
mask = torch.tensor([[1] * len(s) + [0] * (T - len(s)) for s in seqs])
hidden = forward(ids, mask)
m = mask[:, :, None].double()
pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
emb = pooled / pooled.norm(dim=1, keepdim=True).clamp(min=1e-12)

stored = dict(w, **{"embeddings.position_ids": torch.arange(P)[None].float()})
for d in ("tiny", "tiny-bf16", "tiny-sharded"):
    os.makedirs(d, exist_ok=True)
    with open(d + "/config.json", "w") as f:
        json.dump(dict(cfg, torch_dtype="bfloat16") if d == "tiny-bf16" else cfg, f, indent=2)
save("tiny/model.safetensors", stored)
save("tiny-bf16/model.safetensors", {k: v.bfloat16() for k, v in stored.items()})
names = sorted(stored)
halves = {"model-00001-of-00002.safetensors": names[::2], "model-00002-of-00002.safetensors": names[1::2]}
for file, part in halves.items():
    save("tiny-sharded/" + file, {k: stored[k] for k in part})
with open("tiny-sharded/model.safetensors.index.json", "w") as f:
    json.dump({"metadata": {"total_size": sum(4 * v.numel() for v in stored.values())},
               "weight_map": {k: file for file, part in halves.items() for k in part}}, f, indent=2)
tok = {"version": "1.0", "truncation": None, "padding": None,
       "added_tokens": [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                         "normalized": False, "special": True} for i, t in enumerate(special)],
       "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                      "strip_accents": None, "lowercase": True},
       "pre_tokenizer": {"type": "BertPreTokenizer"},
       "post_processor": {"type": "TemplateProcessing",
                          "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
                          "pair": [],
                          "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                                             "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}},
       "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
       "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                 "max_input_chars_per_word": 100, "vocab": ids_of}}
with open("tiny/tokenizer.json", "w") as f:
    json.dump(tok, f, indent=1)
with open("tiny/tokenizer_config.json", "w") as f:
    json.dump({"tokenizer_class": "BertTokenizer", "do_lower_case": True, "pad_token": "[PAD]", "unk_token": "[UNK]",
               "cls_token": "[CLS]", "sep_token": "[SEP]", "mask_token": "[MASK]"}, f, indent=2)
with open("reference.json", "w") as f:
    json.dump({"torch": torch.__version__, "texts": texts, "ids": ids.tolist(), "mask": mask.tolist(),
               "hidden": hidden.flatten().tolist(), "shape": list(hidden.shape),
               "embeddings": emb.tolist()}, f)
print("hidden", list(hidden.shape), "ids", seqs)

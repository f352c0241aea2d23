"""Writes a tiny GPT-2 in Hugging Face's layout (tiny/config.json,
tiny/model.safetensors: GPT2LMHeadModel's names, "transformer." prefixed,
with the causal-mask buffers attn.bias of older checkpoints;
tiny/tokenizer.json: GPT-2's own tokenizer cut to its first 255 merges,
from ../../../tokenizer/testdata/gpt2; tokenizer_config.json and
generation_config.json), the same weights rounded to bfloat16 and stored
as BF16 (tiny-bf16) and in two shards with an index (tiny-sharded), and
reference.json: its logits for two sequences, computed in float64 by
transformers' GPT-2 forward written out in torch (modeling_gpt2.py:
Conv1D layers, x·W + b with W [in, out]; learned positions; gelu_new;
causal attention scaled by 1/sqrt(head dim); final layer norm; the head
tied to wte). Run: python3 reference.py (Debian's python3-torch)."""

import gzip
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../testdata"))
from hflayout import lora_adapter, save, save_adapter, train_lora  # noqa: E402

torch.manual_seed(0)
cfg = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": 512, "n_positions": 16,
       "n_embd": 16, "n_layer": 2, "n_head": 2, "n_inner": None, "layer_norm_epsilon": 1e-5,
       "activation_function": "gelu_new", "tie_word_embeddings": True, "torch_dtype": "float32"}
V, P, E, L, H = cfg["vocab_size"], cfg["n_positions"], cfg["n_embd"], cfg["n_layer"], cfg["n_head"]
D = E // H


def rnd(*shape, scale=0.3):
    return (torch.randn(*shape) * scale).float()


w = {"wte.weight": rnd(V, E), "wpe.weight": rnd(P, E), "ln_f.weight": 1 + rnd(E, scale=0.1), "ln_f.bias": rnd(E, scale=0.1)}
for i in range(L):
    p = f"h.{i}."
    w[p + "ln_1.weight"], w[p + "ln_1.bias"] = 1 + rnd(E, scale=0.1), rnd(E, scale=0.1)
    w[p + "attn.c_attn.weight"], w[p + "attn.c_attn.bias"] = rnd(E, 3 * E), rnd(3 * E, scale=0.1)
    w[p + "attn.c_proj.weight"], w[p + "attn.c_proj.bias"] = rnd(E, E), rnd(E, scale=0.1)
    w[p + "ln_2.weight"], w[p + "ln_2.bias"] = 1 + rnd(E, scale=0.1), rnd(E, scale=0.1)
    w[p + "mlp.c_fc.weight"], w[p + "mlp.c_fc.bias"] = rnd(E, 4 * E), rnd(4 * E, scale=0.1)
    w[p + "mlp.c_proj.weight"], w[p + "mlp.c_proj.bias"] = rnd(4 * E, E), rnd(E, scale=0.1)


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def forward(ids, lora=None, scale=0.0):
    d = {k: v.double() for k, v in w.items()}
    B, T = ids.shape
    h = d["wte.weight"][ids] + d["wpe.weight"][torch.arange(T)]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for i in range(L):
        p = f"h.{i}."
        a = torch.nn.functional.layer_norm(h, (E,), d[p + "ln_1.weight"], d[p + "ln_1.bias"], cfg["layer_norm_epsilon"])
        qkv = torch.addmm(d[p + "attn.c_attn.bias"], a.view(-1, E), d[p + "attn.c_attn.weight"])
        if lora:  # PEFT's LoRA on the Conv1D (fan_in_fan_out): x·Aᵀ·Bᵀ·scale
            la, lb = lora[f"transformer.h.{i}.attn.c_attn"]
            qkv = qkv + scale * (a.view(-1, E) @ la.T @ lb.T)
        qkv = qkv.view(B, T, 3 * E)
        q, k, v = qkv.split(E, dim=2)
        q, k, v = (t.view(B, T, H, D).permute(0, 2, 1, 3) for t in (q, k, v))
        att = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D)
        att = torch.where(mask, att, torch.tensor(torch.finfo(att.dtype).min, dtype=att.dtype))
        o = torch.matmul(torch.softmax(att, dim=-1), v).permute(0, 2, 1, 3).reshape(B * T, E)
        h = h + torch.addmm(d[p + "attn.c_proj.bias"], o, d[p + "attn.c_proj.weight"]).view(B, T, E)
        m = torch.nn.functional.layer_norm(h, (E,), d[p + "ln_2.weight"], d[p + "ln_2.bias"], cfg["layer_norm_epsilon"])
        f = gelu_new(torch.addmm(d[p + "mlp.c_fc.bias"], m.view(-1, E), d[p + "mlp.c_fc.weight"]))
        h = h + torch.addmm(d[p + "mlp.c_proj.bias"], f, d[p + "mlp.c_proj.weight"]).view(B, T, E)
    h = torch.nn.functional.layer_norm(h, (E,), d["ln_f.weight"], d["ln_f.bias"], cfg["layer_norm_epsilon"])
    return h @ d["wte.weight"].T


saved = {"transformer." + k: v for k, v in w.items()}
for i in range(L):  # the causal masks older checkpoints carry
    saved[f"transformer.h.{i}.attn.bias"] = torch.tril(torch.ones(P, P)).view(1, 1, P, P)
for d in ("tiny", "tiny-bf16", "tiny-sharded"):
    os.makedirs(d, exist_ok=True)
    with open(d + "/config.json", "w") as f:
        json.dump(dict(cfg, torch_dtype="bfloat16") if d == "tiny-bf16" else cfg, f, indent=2)
save("tiny/model.safetensors", saved)
save("tiny-bf16/model.safetensors", {k: v.bfloat16() for k, v in saved.items()})
names = sorted(saved)
halves = {"model-00001-of-00002.safetensors": names[:len(names) // 2], "model-00002-of-00002.safetensors": names[len(names) // 2:]}
for file, part in halves.items():
    save("tiny-sharded/" + file, {k: saved[k] for k in part})
with open("tiny-sharded/model.safetensors.index.json", "w") as f:
    json.dump({"metadata": {"total_size": sum(4 * v.numel() for v in saved.values())},
               "weight_map": {k: file for file, part in halves.items() for k in part}}, f, indent=2)

# GPT-2's tokenizer, its first V-1 ids (the 256 bytes and the first
# V-257 merges, whose ids follow the bytes in merge order) and
# <|endoftext|> as id V-1.
with gzip.open("../../../tokenizer/testdata/gpt2/tokenizer.json.gz") as f:
    tok = json.load(f)
merges = tok["model"]["merges"][:V - 257]
vocab = {t: i for t, i in tok["model"]["vocab"].items() if i < V - 1}
for r, m in enumerate(merges):
    assert vocab["".join(m.split(" "))] == 256 + r, m
tok["model"]["vocab"] = dict(vocab, **{"<|endoftext|>": V - 1})
tok["model"]["merges"] = merges
tok["added_tokens"][0]["id"] = V - 1
with open("tiny/tokenizer.json", "w") as f:
    json.dump(tok, f, ensure_ascii=False)
with open("tiny/tokenizer_config.json", "w") as f:
    json.dump({"tokenizer_class": "GPT2Tokenizer", "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
               "model_max_length": P}, f, indent=2)
with open("tiny/generation_config.json", "w") as f:
    json.dump({"bos_token_id": V - 1, "eos_token_id": V - 1}, f, indent=2)
ids = torch.tensor([[3, 1, 4, 1, 5, 9, 2], [6, 5, 3, 5, 8, 9, 7]]) * 37 % V
logits = forward(ids)
# Greedy decoding from a prompt, past the 16 positions (the window slides:
# the last 16 tokens), each step's top two logits further apart than
# float32 can blur.
prompt, tokens, gaps = [300, 101, 44], [], []
seq = list(prompt)
for _ in range(20):
    last = forward(torch.tensor([seq[-P:]]))[0, -1]
    top = torch.topk(last, 2)
    gaps.append(float(top.values[0] - top.values[1]))
    seq.append(int(top.indices[0]))
    tokens.append(seq[-1])
assert min(gaps) > 1e-3, gaps
# LoRA on c_attn (r 4, alpha 8; fan_in_fan_out, as GPT-2's Conv1D), five
# AdamW steps.
adapters = lora_adapter({f"transformer.h.{i}.attn.c_attn": (E, 3 * E) for i in range(L)}, 4, 1)
save_adapter("tiny-lora", adapters, 4, 8.0, ["c_attn"], True)
lora = {"losses": train_lora(lambda x, ab: forward(x, ab, 2.0), adapters, ids.tolist()),
        "logits": forward(ids, {k: (a.double(), b.double()) for k, (a, b) in adapters.items()}, 2.0).flatten().tolist()}
with open("reference.json", "w") as f:
    json.dump({"torch": torch.__version__, "lora": lora, "ids": ids.tolist(), "logits": logits.flatten().tolist(), "shape": list(logits.shape),
               "prompt": prompt, "greedy": tokens, "min_gap": min(gaps)}, f)
print("logits", list(logits.shape), "torch", torch.__version__)

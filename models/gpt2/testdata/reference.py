"""Writes a tiny GPT-2 in Hugging Face's layout (tiny/config.json,
tiny/model.safetensors: GPT2LMHeadModel's names, "transformer." prefixed,
with the causal-mask buffers attn.bias of older checkpoints) and
reference.json: its logits for two sequences, computed in float64 by
transformers' GPT-2 forward written out in torch (modeling_gpt2.py:
Conv1D layers, x·W + b with W [in, out]; learned positions; gelu_new;
causal attention scaled by 1/sqrt(head dim); final layer norm; the head
tied to wte). Run: python3 reference.py (Debian's python3-torch)."""

import json
import math
import struct

import torch

torch.manual_seed(0)
cfg = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": 37, "n_positions": 16,
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


def forward(ids):
    d = {k: v.double() for k, v in w.items()}
    B, T = ids.shape
    h = d["wte.weight"][ids] + d["wpe.weight"][torch.arange(T)]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for i in range(L):
        p = f"h.{i}."
        a = torch.nn.functional.layer_norm(h, (E,), d[p + "ln_1.weight"], d[p + "ln_1.bias"], cfg["layer_norm_epsilon"])
        qkv = torch.addmm(d[p + "attn.c_attn.bias"], a.view(-1, E), d[p + "attn.c_attn.weight"]).view(B, T, 3 * E)
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


def save(path, tensors):
    """safetensors, written out: a little-endian u64 header length, the
    JSON header (padded with spaces to 8 bytes), then the data."""
    header, data, off = {}, b"", 0
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        raw = t.numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        data, off = data + raw, off + len(raw)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


saved = {"transformer." + k: v for k, v in w.items()}
for i in range(L):  # the causal masks older checkpoints carry
    saved[f"transformer.h.{i}.attn.bias"] = torch.tril(torch.ones(P, P)).view(1, 1, P, P)
save("tiny/model.safetensors", saved)
with open("tiny/config.json", "w") as f:
    json.dump(cfg, f, indent=2)
ids = torch.tensor([[3, 1, 4, 1, 5, 9, 2], [6, 5, 3, 5, 8, 9, 7]])
logits = forward(ids)
# Greedy decoding from a prompt, past the 16 positions (the window slides:
# the last 16 tokens), each step's top two logits further apart than
# float32 can blur.
prompt, tokens, gaps = [3, 1, 4], [], []
seq = list(prompt)
for _ in range(20):
    last = forward(torch.tensor([seq[-P:]]))[0, -1]
    top = torch.topk(last, 2)
    gaps.append(float(top.values[0] - top.values[1]))
    seq.append(int(top.indices[0]))
    tokens.append(seq[-1])
assert min(gaps) > 1e-3, gaps
with open("reference.json", "w") as f:
    json.dump({"torch": torch.__version__, "ids": ids.tolist(), "logits": logits.flatten().tolist(), "shape": list(logits.shape),
               "prompt": prompt, "greedy": tokens, "min_gap": min(gaps)}, f)
print("logits", list(logits.shape), "torch", torch.__version__)

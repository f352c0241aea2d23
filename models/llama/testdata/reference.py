"""Writes tiny models of the Llama family in Hugging Face's layout and
names (LlamaForCausalLM's: model.embed_tokens, model.layers.N.{input_layernorm,
self_attn.{q,k,v,o}_proj, post_attention_layernorm, mlp.{gate,up,down}_proj},
model.norm, lm_head) and reference.json, their logits and greedy
continuations computed in float64 by the forward of transformers'
modeling_llama.py written out in torch: RMSNorm; rotary position
embeddings with rotate_half (the first and second halves of each head's
dimensions), rope_theta and linear rope_scaling (positions divided by the
factor); grouped-query attention (each key-value head repeated for
num_attention_heads / num_key_value_heads query heads); causal attention
scaled by 1/sqrt(head_dim); the SwiGLU MLP down(silu(gate(x)) * up(x)).

- tiny: llama, 4 heads over 2 key-value heads, linear rope scaling by 2,
  an untied lm_head, the rotary inv_freq buffers older checkpoints hold;
  also stored in BF16 (tiny-bf16, the weights rounded) and in two shards
  (tiny-sharded).
- tiny-qwen2: qwen2, biases on q, k and v, rope_theta 1e6, the head tied
  to the embedding (no lm_head.weight stored).

The tokenizer is models/gpt2's tiny one. Run: python3 reference.py
(Debian's python3-torch; make torch-reference)."""

import json
import math
import os
import shutil
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../testdata"))
from hflayout import lora_adapter, save, save_adapter, train_lora  # noqa: E402

torch.manual_seed(0)
V = 512
base = {"vocab_size": V, "hidden_size": 16, "intermediate_size": 40, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 32,
        "rms_norm_eps": 1e-6, "hidden_act": "silu", "torch_dtype": "float32",
        "bos_token_id": V - 1, "eos_token_id": V - 1}
configs = {
    "tiny": dict(base, model_type="llama", architectures=["LlamaForCausalLM"], rope_theta=10000.0,
                 rope_scaling={"type": "linear", "factor": 2.0}, tie_word_embeddings=False, attention_bias=False),
    "tiny-qwen2": dict(base, model_type="qwen2", architectures=["Qwen2ForCausalLM"], rope_theta=1e6,
                       rope_scaling=None, tie_word_embeddings=True, use_sliding_window=False, sliding_window=32),
}


def rnd(*shape, scale=0.3):
    return (torch.randn(*shape) * scale).float()


def weights(cfg):
    E, I, H, K = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D = E // H
    qwen = cfg["model_type"] == "qwen2"
    w = {"model.embed_tokens.weight": rnd(V, E), "model.norm.weight": 1 + rnd(E, scale=0.1)}
    if not cfg["tie_word_embeddings"]:
        w["lm_head.weight"] = rnd(V, E)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = 1 + rnd(E, scale=0.1)
        w[p + "post_attention_layernorm.weight"] = 1 + rnd(E, scale=0.1)
        w[p + "self_attn.q_proj.weight"] = rnd(H * D, E)
        w[p + "self_attn.k_proj.weight"] = rnd(K * D, E)
        w[p + "self_attn.v_proj.weight"] = rnd(K * D, E)
        w[p + "self_attn.o_proj.weight"] = rnd(E, H * D)
        if qwen:
            for n, o in (("q", H * D), ("k", K * D), ("v", K * D)):
                w[p + f"self_attn.{n}_proj.bias"] = rnd(o, scale=0.1)
        w[p + "mlp.gate_proj.weight"] = rnd(I, E)
        w[p + "mlp.up_proj.weight"] = rnd(I, E)
        w[p + "mlp.down_proj.weight"] = rnd(E, I)
    return w


def rms_norm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def forward(cfg, w, ids, lora=None, scale=0.0):
    d = {k: v.double() for k, v in w.items()}
    E, H, K = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D = E // H
    B, T = ids.shape
    pos = torch.arange(T, dtype=torch.float64)
    if cfg["rope_scaling"]:
        pos = pos / cfg["rope_scaling"]["factor"]
    inv_freq = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    freqs = torch.outer(pos, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    h = d["model.embed_tokens.weight"][ids]

    def proj(x, name, p):
        y = x @ d[p + name + ".weight"].T
        if p + name + ".bias" in d:
            y = y + d[p + name + ".bias"]
        if lora and p + name in lora:
            a, b = lora[p + name]
            y = y + scale * (x @ a.T @ b.T)
        return y

    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        x = rms_norm(h, d[p + "input_layernorm.weight"], cfg["rms_norm_eps"])
        q = proj(x, "self_attn.q_proj", p).view(B, T, H, D).transpose(1, 2)
        k = proj(x, "self_attn.k_proj", p).view(B, T, K, D).transpose(1, 2)
        v = proj(x, "self_attn.v_proj", p).view(B, T, K, D).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k = k[:, :, None].expand(B, K, H // K, T, D).reshape(B, H, T, D)
        v = v[:, :, None].expand(B, K, H // K, T, D).reshape(B, H, T, D)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(D)
        att = torch.where(mask, att, torch.tensor(torch.finfo(att.dtype).min, dtype=att.dtype))
        o = (torch.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(B, T, H * D)
        h = h + proj(o, "self_attn.o_proj", p)
        x = rms_norm(h, d[p + "post_attention_layernorm.weight"], cfg["rms_norm_eps"])
        h = h + proj(torch.nn.functional.silu(proj(x, "mlp.gate_proj", p)) * proj(x, "mlp.up_proj", p), "mlp.down_proj", p)
    h = rms_norm(h, d["model.norm.weight"], cfg["rms_norm_eps"])
    head = d["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else d["lm_head.weight"]
    return h @ head.T


def write(d, cfg, tensors, shards=1):
    os.makedirs(d, exist_ok=True)
    with open(d + "/config.json", "w") as f:
        json.dump(cfg, f, indent=2)
    with open(d + "/generation_config.json", "w") as f:
        json.dump({"bos_token_id": V - 1, "eos_token_id": V - 1}, f, indent=2)
    for t in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy("../../gpt2/testdata/tiny/" + t, d + "/" + t)
    if shards == 1:
        save(d + "/model.safetensors", tensors)
        return
    names = sorted(tensors)
    parts = {f"model-0000{i + 1}-of-0000{shards}.safetensors": names[i::shards] for i in range(shards)}
    for file, part in parts.items():
        save(d + "/" + file, {k: tensors[k] for k in part})
    with open(d + "/model.safetensors.index.json", "w") as f:
        json.dump({"metadata": {"total_size": sum(t.numel() * t.element_size() for t in tensors.values())},
                   "weight_map": {k: file for file, part in parts.items() for k in part}}, f, indent=2)


ref = {"torch": torch.__version__, "models": {}}
ids = torch.tensor([[111, 37, 148, 37, 185, 333, 74, 5, 9], [222, 185, 111, 185, 296, 333, 259, 1, 2]])
for name, cfg in configs.items():
    w = weights(cfg)
    stored = dict(w)
    if name == "tiny":
        D = cfg["hidden_size"] // cfg["num_attention_heads"]
        for i in range(cfg["num_hidden_layers"]):
            stored[f"model.layers.{i}.self_attn.rotary_emb.inv_freq"] = 1.0 / (10000.0 ** (torch.arange(0, D, 2).float() / D))
        write("tiny-bf16", dict(cfg, torch_dtype="bfloat16"), {k: v.bfloat16() for k, v in stored.items()})
        write("tiny-sharded", cfg, stored, shards=2)
    write(name, cfg, stored)
    logits = forward(cfg, w, ids)
    # Greedy decoding from a prompt up to the context, each step's top
    # two logits further apart than float32 can blur.
    prompt, seq, gaps = [300, 101, 44], [300, 101, 44], []
    while len(seq) < cfg["max_position_embeddings"]:
        last = forward(cfg, w, torch.tensor([seq]))[0, -1]
        top = torch.topk(last, 2)
        gaps.append(float(top.values[0] - top.values[1]))
        seq.append(int(top.indices[0]))
    assert min(gaps) > 1e-3, (name, min(gaps))
    lora = {}
    if name == "tiny":
        # LoRA on q_proj and v_proj (r 4, alpha 8), five AdamW steps.
        E, K, D = cfg["hidden_size"], cfg["num_key_value_heads"], cfg["hidden_size"] // cfg["num_attention_heads"]
        shapes = {f"model.layers.{i}.self_attn.{n}": (E, E if n == "q_proj" else K * D)
                  for i in range(cfg["num_hidden_layers"]) for n in ("q_proj", "v_proj")}
        adapters = lora_adapter(shapes, 4, 1)
        save_adapter("tiny-lora", adapters, 4, 8.0, ["q_proj", "v_proj"], False)
        lora = {"losses": train_lora(lambda x, ab: forward(cfg, w, x, ab, 8.0 / 4), adapters, ids.tolist()),
                "logits": forward(cfg, w, ids, {k: (a.double(), b.double()) for k, (a, b) in adapters.items()}, 2.0).flatten().tolist()}
    ref["models"][name] = {"lora": lora, "ids": ids.tolist(), "logits": logits.flatten().tolist(), "shape": list(logits.shape),
                           "prompt": prompt, "greedy": seq[len(prompt):], "min_gap": min(gaps)}
    print(name, "logits", list(logits.shape), "min gap", min(gaps))
with open("reference.json", "w") as f:
    json.dump(ref, f)

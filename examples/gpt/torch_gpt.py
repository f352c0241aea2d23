"""examples/gpt's model and training in PyTorch, on the same windows.

Usage:
  go run ./examples/gpt -export DIR [the run's flags]
  python3 examples/gpt/torch_gpt.py DIR [--threads N] [--steps N] [--check CKPT]

DIR holds what -export wrote: train.bin and val.bin (the corpus's bytes),
starts.bin and val_starts.bin (each step's and each validation batch's
window starts, int64 little-endian) and config.json (the sizes and the
optimiser's settings). The script builds the same model (token and
learned position embeddings; pre-norm nn.TransformerEncoderLayer blocks
with GELU and a causal mask; a final LayerNorm; the output tied to the
token embedding; GPT-2's initialisation: N(0, 0.02²), the residual
branches' output projections N(0, 0.02²/(2·layers)), biases zero) and
trains it with AdamW, linear warmup then cosine decay, and clipping by
global norm, on the windows extensor draws. It prints the validation loss
at step 0, every eval_every steps and at the end, and the training tokens
a second (evaluation excluded), as JSON lines.

--steps stops early (for a throughput figure). --check CKPT loads an
extensor checkpoint of the same model (its state_dict names are this
model's) and prints its validation loss here, to set beside extensor's.
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "internal", "torchpy"))
from safetensors_reader import load_file  # noqa: E402
from blas import blas  # noqa: E402

STD = 0.02


class GPT(nn.Module):
    def __init__(self, c):
        super().__init__()
        v, t, e, h, n, p = c["vocab"], c["context"], c["width"], c["heads"], c["layers"], c["dropout"]
        self.tok = nn.Embedding(v, e)
        self.pos = nn.Embedding(t, e)
        self.drop = nn.Dropout(p)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(e, h, 4 * e, p, activation="gelu", batch_first=True, norm_first=True)
            for _ in range(n))
        self.norm = nn.LayerNorm(e)
        proj = STD / math.sqrt(2 * n)
        with torch.no_grad():
            for w in (self.tok.weight, self.pos.weight):
                w.normal_(0, STD)
            for b in self.blocks:
                b.self_attn.in_proj_weight.normal_(0, STD)
                b.self_attn.in_proj_bias.zero_()
                b.self_attn.out_proj.weight.normal_(0, proj)
                b.self_attn.out_proj.bias.zero_()
                b.linear1.weight.normal_(0, STD)
                b.linear1.bias.zero_()
                b.linear2.weight.normal_(0, proj)
                b.linear2.bias.zero_()
        self.register_buffer("mask", torch.triu(torch.full((t, t), float("-inf")), 1), persistent=False)

    def forward(self, idx):
        t = idx.shape[1]
        h = self.drop(self.tok(idx) + self.pos(torch.arange(t, device=idx.device)))
        for b in self.blocks:
            h = b(h, src_mask=self.mask[:t, :t])
        return self.norm(h) @ self.tok.weight.t()

    def loss(self, x, y):
        logits = self.forward(x)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def windows(tokens, starts, context):
    idx = starts[:, None] + torch.arange(context + 1)[None, :]
    w = tokens[idx]
    return w[:, :-1], w[:, 1:]


def schedule(c, step):
    if step < c["warmup"]:
        return c["lr"] * (step + 1) / c["warmup"]
    t = min(1.0, (step - c["warmup"]) / max(1, c["decay_steps"] - c["warmup"]))
    return c["min_lr"] + (c["lr"] - c["min_lr"]) * (1 + math.cos(math.pi * t)) / 2


def evaluate(model, val, vstarts, c):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for i in range(c["eval_batches"]):
            x, y = windows(val, vstarts[i * c["batch"]:(i + 1) * c["batch"]], c["context"])
            total += model.loss(x, y).item()
    model.train()
    return total / c["eval_batches"]


def read_bytes(path):
    with open(path, "rb") as f:
        return torch.frombuffer(bytearray(f.read()), dtype=torch.uint8).long()


def read_int64(path):
    with open(path, "rb") as f:
        return torch.frombuffer(bytearray(f.read()), dtype=torch.int64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: PyTorch's default, every core)")
    ap.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: the configuration's)")
    ap.add_argument("--check", default="", help="an extensor checkpoint to measure here")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    with open(os.path.join(a.dir, "config.json")) as f:
        c = json.load(f)
    torch.manual_seed(c["seed"])
    train, val = read_bytes(os.path.join(a.dir, "train.bin")), read_bytes(os.path.join(a.dir, "val.bin"))
    starts = read_int64(os.path.join(a.dir, "starts.bin")).reshape(-1, c["batch"])
    vstarts = read_int64(os.path.join(a.dir, "val_starts.bin"))
    model = GPT(c)
    if a.check:
        params, _ = load_file(a.check)
        state = {k: v for k, v in params.items() if not k.startswith("optim.")}
        model.load_state_dict(state, strict=True)
        print(json.dumps({"checkpoint": a.check, "val_loss": evaluate(model, val, vstarts, c)}), flush=True)
        return
    opt = torch.optim.AdamW(model.parameters(), lr=c["lr"], betas=(0.9, 0.999), eps=1e-8, weight_decay=c["weight_decay"])
    steps = a.steps or c["steps"]
    print(json.dumps({"step": 0, "val_loss": evaluate(model, val, vstarts, c), "threads": torch.get_num_threads(),
                      "torch": torch.__version__, "blas": blas()}), flush=True)
    elapsed, ran = 0.0, 0
    t0 = time.perf_counter()
    for step in range(1, steps + 1):
        for g in opt.param_groups:
            g["lr"] = schedule(c, step - 1)
        x, y = windows(train, starts[step - 1], c["context"])
        loss = model.loss(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if c["clip"] > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), c["clip"])
        opt.step()
        ran += 1
        if step % c["eval_every"] == 0 or step == steps:
            l = loss.item()
            elapsed += time.perf_counter() - t0
            rec = {"step": step, "loss": l, "tokens_per_s": ran * c["batch"] * c["context"] / elapsed}
            rec["val_loss"] = evaluate(model, val, vstarts, c)
            print(json.dumps(rec), flush=True)
            t0 = time.perf_counter()


if __name__ == "__main__":
    main()

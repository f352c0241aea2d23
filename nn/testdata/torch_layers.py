"""Loads extensor's Embedding, MultiheadAttention, Transformer, GroupNorm,
Conv1d, ConvTranspose2d and BatchNorm layers into PyTorch's.

Usage: torch_layers.py PARAMS IO

PARAMS (safetensors) holds each layer's state_dict under a prefix: "emb.",
"mha.", "block.", "gn.", "c1.", "ct." and "bn." (with its running
statistics and num_batches_tracked). IO holds the sizes ("sizes": vocabulary,
features, heads, hidden, groups, channels), the inputs ("idx", int32;
"x"; "gx"; "c1x"; "ctx"; "bnx") and extensor's outputs ("emb", "mha",
"block", "gn", "c1", "ct", "bn", the last in evaluation mode). The script builds nn.Embedding, nn.MultiheadAttention
(batch_first), nn.TransformerEncoderLayer (norm_first, batch_first,
GELU), nn.GroupNorm, and the convolutions as the Go test configures
them, loads each with
load_state_dict(strict=True), runs them in evaluation mode (the attention
causal, as a float mask of −Inf above the diagonal) and prints, as JSON,
each output's largest difference from extensor's.
"""
import json
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "internal", "torchpy"))
from safetensors_reader import load_file  # noqa: E402


def part(params, prefix):
    return {k[len(prefix):]: v for k, v in params.items() if k.startswith(prefix)}


def main():
    params, _ = load_file(sys.argv[1])
    io, _ = load_file(sys.argv[2])
    vocab, embed, heads, hidden, groups, channels = (int(v) for v in io["sizes"].tolist())
    x = io["x"]
    causal = torch.triu(torch.full((x.shape[1], x.shape[1]), float("-inf")), 1)

    emb = nn.Embedding(vocab, embed)
    emb.load_state_dict(part(params, "emb."), strict=True)
    mha = nn.MultiheadAttention(embed, heads, batch_first=True)
    mha.load_state_dict(part(params, "mha."), strict=True)
    block = nn.TransformerEncoderLayer(embed, heads, hidden, dropout=0.1, activation="gelu", batch_first=True, norm_first=True)
    block.load_state_dict(part(params, "block."), strict=True)
    gn = nn.GroupNorm(groups, channels)
    gn.load_state_dict(part(params, "gn."), strict=True)
    c1 = nn.Conv1d(3, 5, 3, stride=2, padding=1, dilation=2)
    c1.load_state_dict(part(params, "c1."), strict=True)
    ct = nn.ConvTranspose2d(4, 3, 3, stride=2, padding=(1, 2), output_padding=(1, 0), dilation=(2, 1))
    ct.load_state_dict(part(params, "ct."), strict=True)
    bn = nn.BatchNorm2d(3)
    bn.load_state_dict(part(params, "bn."), strict=True)
    for m in (emb, mha, block, gn, c1, ct, bn):
        m.eval()
    with torch.no_grad():
        out = {
            "emb": emb(io["idx"].long()),
            "mha": mha(x, x, x, attn_mask=causal, need_weights=False)[0],
            "block": block(x, src_mask=causal),
            "gn": gn(io["gx"]),
            "c1": c1(io["c1x"]),
            "ct": ct(io["ctx"]),
            "bn": bn(io["bnx"]),
        }
    print(json.dumps({k: (v - io[k]).abs().max().item() for k, v in out.items()}))


if __name__ == "__main__":
    main()

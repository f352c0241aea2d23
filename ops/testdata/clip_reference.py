#!/usr/bin/env python3
"""Writes clip_grad_norm.json: PyTorch's torch.nn.utils.clip_grad_norm_
on gradients of several shapes (float32), the reference of
ops.ClipGradNorm (TestClipGradNormTorch). Run from the repository root:
  /usr/bin/python3 ops/testdata/clip_reference.py
"""
import json
import math

import torch

torch.manual_seed(0)


def num(v):
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


cases = []
shapes = [[3], [2, 5], [7], [1], [4, 4], [11], [2, 3, 2]]
for name, max_norm, scale, special in [
    ("clipped", 1.0, 1.0, None),
    ("unclipped", 100.0, 1.0, None),
    ("large", 0.5, 1e18, None),
    ("tiny", 1.0, 1e-20, None),
    ("nan", 1.0, 1.0, float("nan")),
    ("inf", 1.0, 1.0, float("inf")),
]:
    grads = [(torch.randn(s) * scale).float() for s in shapes]
    if special is not None:
        grads[3].view(-1)[0] = special
    params = []
    for g in grads:
        p = torch.zeros(g.shape, requires_grad=True)
        p.grad = g.clone()
        params.append(p)
    norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
    cases.append({
        "name": name,
        "max_norm": max_norm,
        "shapes": shapes,
        "grads": [[num(v) for v in g.reshape(-1).tolist()] for g in grads],
        "norm": num(norm.item()),
        "clipped": [[num(v) for v in p.grad.reshape(-1).tolist()] for p in params],
    })
with open("ops/testdata/clip_grad_norm.json", "w") as f:
    json.dump({"torch": torch.__version__, "cases": cases}, f, indent=1)
    f.write("\n")

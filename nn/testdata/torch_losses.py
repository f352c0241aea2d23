"""Compares extensor's cross_entropy and nll_loss with class weights,
ignore_index and label smoothing with PyTorch's.

Usage: torch_losses.py IO CASES

IO (safetensors) holds the logits "x", the labels "y" (int32, −100 where
ignored), the class weights "w" and extensor's loss "out<i>" of each case
i of CASES, a JSON list of {"loss": "ce" or "nll", "reduction",
"weight": bool, "smoothing": ε}. Prints, as JSON, each case's largest
difference from F.cross_entropy or F.nll_loss (of log_softmax(x)) with
ignore_index=−100.
"""
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "internal", "torchpy"))
from safetensors_reader import load_file  # noqa: E402


def main():
    io, _ = load_file(sys.argv[1])
    x, y, w = io["x"].double(), io["y"].long(), io["w"].double()
    diffs = []
    for i, c in enumerate(json.loads(sys.argv[2])):
        weight = w if c["weight"] else None
        if c["loss"] == "ce":
            ref = F.cross_entropy(x, y, weight=weight, ignore_index=-100, reduction=c["reduction"], label_smoothing=c["smoothing"])
        else:
            ref = F.nll_loss(F.log_softmax(x, 1), y, weight=weight, ignore_index=-100, reduction=c["reduction"])
        diffs.append((ref - io[f"out{i}"].double()).abs().max().item())
    print(json.dumps(diffs))


if __name__ == "__main__":
    main()

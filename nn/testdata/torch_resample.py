"""Compares extensor's resamplings with PyTorch's.

Usage: torch_resample.py IO CASES

IO (safetensors) holds the input "x" and extensor's output "out<i>" of
each case i of CASES, a JSON list of {"size": [OH, OW], "mode":
"nearest", "bilinear" or "adaptive", "align": bool}. Prints, as JSON, the
largest difference of each case from F.interpolate or
F.adaptive_avg_pool2d.
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
    x = io["x"]
    diffs = []
    for i, c in enumerate(json.loads(sys.argv[2])):
        if c["mode"] == "adaptive":
            y = F.adaptive_avg_pool2d(x, c["size"])
        elif c["mode"] == "nearest":
            y = F.interpolate(x, size=c["size"], mode="nearest")
        else:
            y = F.interpolate(x, size=c["size"], mode="bilinear", align_corners=c["align"])
        diffs.append((y - io[f"out{i}"]).abs().max().item())
    print(json.dumps(diffs))


if __name__ == "__main__":
    main()

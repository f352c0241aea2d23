"""Opens an extensor checkpoint of examples/cnn in PyTorch.

Usage: torch_load.py CHECKPOINT IO

Reads CHECKPOINT (the safetensors file that examples/cnn saves) following
the format's specification as the safetensors package checks it (an 8-byte
little-endian header length, a JSON header, data offsets that cover the
data exactly and in order), loads its parameters into the same network
built in PyTorch with load_state_dict(strict=True), runs that network in
evaluation mode on the images "x" of IO (another safetensors file) and
prints, as JSON, the largest difference from IO's "logits" (extensor's
output for the same images), the metadata and the names of the tensors.

The safetensors package is not installable on our machines (no PyPI, no
Debian package): this reader stands in for its load_file.
"""
import json
import struct
import sys

import torch
import torch.nn as nn

DTYPES = {"F32": (torch.float32, 4), "F64": (torch.float64, 8), "F16": (torch.float16, 2), "I32": (torch.int32, 4)}


def load_file(path):
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: shorter than the header length")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > 100_000_000 or 8 + n > len(raw):
        raise ValueError(f"{path}: header length {n} does not fit the file")
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = raw[8 + n:]
    metadata = header.pop("__metadata__", {})
    tensors, end = {}, 0
    for name, e in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"]):
        dtype, size = DTYPES[e["dtype"]]
        start, stop = e["data_offsets"]
        count = 1
        for d in e["shape"]:
            count *= d
        if start != end or stop - start != count * size:
            raise ValueError(f"{path}: {name}: offsets {start}, {stop} for {count} elements after byte {end}")
        end = stop
        buf = bytearray(data[start:stop])
        t = torch.frombuffer(buf, dtype=dtype) if buf else torch.empty(0, dtype=dtype)
        tensors[name] = t.reshape(e["shape"])
    if end != len(data):
        raise ValueError(f"{path}: the tensors cover {end} of {len(data)} data bytes")
    return tensors, metadata


def cnn():
    return nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(1600, 128), nn.ReLU(), nn.Dropout(0.25), nn.Linear(128, 10))


def main():
    tensors, metadata = load_file(sys.argv[1])
    io, _ = load_file(sys.argv[2])
    params = {k: v for k, v in tensors.items() if not k.startswith("optim.")}
    net = cnn()
    net.load_state_dict(params, strict=True)
    net.eval()
    with torch.no_grad():
        logits = net(io["x"])
    print(json.dumps({
        "max_diff": (logits - io["logits"]).abs().max().item(),
        "metadata": metadata,
        "params": sorted(params),
        "optim": sorted(k for k in tensors if k.startswith("optim.")),
    }))


if __name__ == "__main__":
    main()

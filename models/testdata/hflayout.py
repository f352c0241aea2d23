"""What the models' reference.py scripts share: writing tensors as
safetensors (F32, or BF16 for bfloat16 tensors), as transformers'
save_pretrained stores them."""

import json
import struct

import torch


def save(path, tensors):
    """safetensors, written out: a little-endian u64 header length, the
    JSON header (padded with spaces to 8 bytes), then the data."""
    header, data, off = {}, b"", 0
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        if t.dtype == torch.bfloat16:
            raw, dt = t.view(torch.int16).numpy().tobytes(), "BF16"
        else:
            raw, dt = t.numpy().tobytes(), "F32"
        header[name] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        data, off = data + raw, off + len(raw)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)

"""The few safetensors files FlashInfer-Bench workloads carry for index tensors (qo_indptr, kv_indptr): read and
written without the safetensors package (the format: an 8-byte little-endian header length, a JSON header naming
each tensor's dtype, shape and byte offsets, then the bytes). Integer tensors only; anything else is refused."""
from __future__ import annotations

import json
import struct
from pathlib import Path

INT_DTYPES = {"I32": "<i", "I64": "<q", "U8": "<B", "I16": "<h"}
MAX_HEADER = 1 << 20


def read_ints(path: Path, key: str) -> list[int]:
    """The integers of tensor `key` in a safetensors file; ValueError saying what is wrong."""
    data = Path(path).read_bytes()
    if len(data) < 8:
        raise ValueError(f"{path}: not a safetensors file (shorter than its header length)")
    (size,) = struct.unpack("<Q", data[:8])
    if size > MAX_HEADER or 8 + size > len(data):
        raise ValueError(f"{path}: not a safetensors file (header length {size})")
    try:
        header = json.loads(data[8:8 + size])
    except ValueError:
        raise ValueError(f"{path}: its safetensors header is not JSON") from None
    spec = header.get(key) if isinstance(header, dict) else None
    if not isinstance(spec, dict):
        raise ValueError(f"{path}: no tensor {key!r}")
    fmt = INT_DTYPES.get(spec.get("dtype"))
    if fmt is None:
        raise ValueError(f"{path}: tensor {key!r} is {spec.get('dtype')}, not an integer tensor")
    start, end = spec.get("data_offsets", [0, 0])
    body = data[8 + size + start:8 + size + end]
    width = struct.calcsize(fmt)
    if len(body) % width or end < start:
        raise ValueError(f"{path}: tensor {key!r} has a torn body")
    return [v for (v,) in struct.iter_unpack(fmt, body)]


def write_ints(path: Path, tensors: dict[str, list[int]]) -> None:
    """int32 1-D tensors into one safetensors file."""
    header, body, offset = {}, b"", 0
    for key, values in tensors.items():
        raw = struct.pack(f"<{len(values)}i", *values)
        header[key] = {"dtype": "I32", "shape": [len(values)], "data_offsets": [offset, offset + len(raw)]}
        body, offset = body + raw, offset + len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    Path(path).write_bytes(struct.pack("<Q", len(text)) + text + body)

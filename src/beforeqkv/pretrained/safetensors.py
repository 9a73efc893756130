"""A small reader for the safetensors format (chapter 10), with no dependency but torch.

The format is three parts, back to back::

    8 bytes      N, the header length (unsigned, little-endian)
    N bytes      a JSON object: name -> {"dtype", "shape", "data_offsets": [begin, end]},
                 plus an optional "__metadata__" of strings
    the rest     raw little-endian tensor bytes; offsets count from the start of this part

Every promise the header makes is checked against the file before any tensor is built
(offsets inside the data, tensors neither overlapping nor leaving gaps, offsets aligned to
the element size, shape x element size = byte length), so a truncated or corrupt file
gives a ``ValueError`` naming the problem, never a crash or a huge allocation.
"""
from __future__ import annotations

import json
import math
import os
import struct
import sys
from pathlib import Path

import torch

__all__ = ["DTYPES", "MAX_HEADER_BYTES", "read_header", "parse_header", "load_safetensors", "loads_safetensors"]

# safetensors dtype name -> (torch dtype, bytes per element)
DTYPES = {
    "F64": (torch.float64, 8), "F32": (torch.float32, 4), "F16": (torch.float16, 2),
    "BF16": (torch.bfloat16, 2), "I64": (torch.int64, 8), "I32": (torch.int32, 4),
    "I16": (torch.int16, 2), "I8": (torch.int8, 1), "U8": (torch.uint8, 1), "BOOL": (torch.bool, 1),
}
MAX_HEADER_BYTES = 100_000_000  # the reference implementation's limit too


def _no_duplicates(pairs):
    seen = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"safetensors header: the name {key!r} appears twice")
        seen[key] = value
    return seen


def parse_header(header: bytes, data_bytes: int) -> tuple[dict, dict]:
    """Validate a JSON header against ``data_bytes`` bytes of tensor data.

    Returns ``(entries, metadata)``: entries name -> (dtype name, shape tuple, begin, end),
    in file order. Raises ``ValueError`` naming the first problem found.
    """
    try:
        obj = json.loads(header.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except UnicodeDecodeError as err:
        raise ValueError(f"safetensors header is not valid UTF-8 ({err.reason} at byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"safetensors header is not valid JSON: {err.msg} at byte {err.pos}") from None
    if not isinstance(obj, dict):
        raise ValueError(f"safetensors header must be a JSON object, got {type(obj).__name__}")
    metadata = obj.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise ValueError("safetensors __metadata__ must map names to strings")
    entries = {name: _entry(name, info, data_bytes) for name, info in obj.items()}
    _check_layout(entries, data_bytes)
    return entries, metadata


def _entry(name: str, info, data_bytes: int) -> tuple[str, tuple, int, int]:
    """(dtype name, shape, begin, end) of one tensor's header entry, checked on its own."""
    where = f"safetensors tensor {name!r}"
    if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
        raise ValueError(f"{where}: needs exactly the fields dtype, shape, data_offsets, got {info!r:.80}")
    dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if dtype not in DTYPES:
        raise ValueError(f"{where}: unknown dtype {dtype!r}; this reader knows {sorted(DTYPES)}")
    if not isinstance(shape, list) or not all(type(s) is int and s >= 0 for s in shape):
        raise ValueError(f"{where}: shape must be a list of non-negative ints, got {shape!r:.80}")
    if (not isinstance(offsets, list) or len(offsets) != 2
            or not all(type(o) is int and o >= 0 for o in offsets)):
        raise ValueError(f"{where}: data_offsets must be [begin, end] (non-negative ints), got {offsets!r:.80}")
    begin, end = offsets
    size = DTYPES[dtype][1]
    if not begin <= end <= data_bytes:
        raise ValueError(f"{where}: data_offsets [{begin}, {end}] point past the end of the data "
                         f"({data_bytes} bytes): the file is truncated or the header is corrupt")
    if begin % size:
        raise ValueError(f"{where}: offset {begin} is not a multiple of the {dtype} element size {size}")
    if math.prod(shape) * size != end - begin:
        raise ValueError(f"{where}: shape {shape} of {dtype} needs {math.prod(shape) * size} bytes, "
                         f"but data_offsets give {end - begin}")
    return dtype, tuple(shape), begin, end


def _check_layout(entries: dict, data_bytes: int) -> None:
    """The tensors tile the data exactly: no overlap, no gap, nothing after the last one."""
    position = 0
    for name, (_, _, begin, end) in sorted(entries.items(), key=lambda item: (item[1][2], item[1][3])):
        if begin < position:
            raise ValueError(f"safetensors tensor {name!r} overlaps the tensor before it (starts at {begin}, "
                             f"the previous one ends at {position})")
        if begin > position:
            raise ValueError(f"safetensors data has a gap of {begin - position} bytes before {name!r}")
        position = end
    if position != data_bytes:
        raise ValueError(f"safetensors data has {data_bytes - position} bytes after the last tensor "
                         f"(tensors end at {position}, data is {data_bytes} bytes)")


def _header_length(first8: bytes, total: int, what: str) -> int:
    """N from the first 8 bytes of a file of ``total`` bytes, checked against the file size."""
    if total < 8:
        raise ValueError(f"{what} is {total} bytes: too short for a safetensors file (8-byte header length)")
    (n,) = struct.unpack("<Q", bytes(first8[:8]))
    if n > MAX_HEADER_BYTES:
        raise ValueError(f"{what}: header length {n} is absurd (limit {MAX_HEADER_BYTES}); not a safetensors file?")
    if 8 + n > total:
        raise ValueError(f"{what}: header length {n} points past the end of the file ({total} bytes): truncated?")
    return n


def loads_safetensors(buffer: bytes | bytearray, what: str = "safetensors data") -> dict[str, torch.Tensor]:
    """Tensors from the bytes of a safetensors file: name -> tensor (CPU).

    The tensors share memory with ``buffer`` when it is a ``bytearray`` (no copy).
    """
    if not isinstance(buffer, (bytes, bytearray)):
        raise ValueError(f"expected bytes or bytearray, got {type(buffer).__name__}")
    if sys.byteorder != "little":  # pragma: no cover - every machine the book runs on
        raise ValueError("this reader assumes a little-endian machine")
    if isinstance(buffer, bytes):
        buffer = bytearray(buffer)  # torch.frombuffer wants writable memory
    n = _header_length(buffer[:8], len(buffer), what)
    start = 8 + n
    entries, _ = parse_header(bytes(buffer[8:start]), len(buffer) - start)
    tensors = {}
    for name, (dtype, shape, begin, end) in entries.items():
        torch_dtype, size = DTYPES[dtype]
        if begin == end:
            tensors[name] = torch.empty(shape, dtype=torch_dtype)
            continue
        source, offset = buffer, start + begin
        if offset % size:  # unaligned in memory (odd header length): copy this tensor
            source, offset = bytearray(buffer[offset:start + end]), 0
        flat = torch.frombuffer(source, dtype=torch_dtype, count=(end - begin) // size, offset=offset)
        tensors[name] = flat.view(shape)  # (*shape)
    return tensors


def read_header(path: str | os.PathLike) -> dict:
    """The header of a safetensors file, validated, without reading the tensor data.

    Returns name -> {"dtype", "shape", "data_offsets"} plus "__metadata__" if present.
    """
    path = Path(path)
    total = path.stat().st_size
    with open(path, "rb") as f:
        n = _header_length(f.read(8), total, str(path))
        entries, metadata = parse_header(f.read(n), total - 8 - n)
    out = {name: {"dtype": d, "shape": list(s), "data_offsets": [b, e]} for name, (d, s, b, e) in entries.items()}
    if metadata:
        out["__metadata__"] = metadata
    return out


def load_safetensors(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    """All tensors of a safetensors file: name -> tensor (CPU), read in one pass.

    A truncated or corrupt file raises ``ValueError``. Chapter 10.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no such safetensors file: {path}")
    buffer = bytearray(path.stat().st_size)
    with open(path, "rb") as f:
        if f.readinto(buffer) != len(buffer):
            raise ValueError(f"{path}: could not read the whole file (changed while reading?)")
    return loads_safetensors(buffer, what=str(path))

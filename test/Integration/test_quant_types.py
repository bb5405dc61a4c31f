# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Every ggml block type RLX reads, end to end through the Python module
against gguf-py: a GGUF file written by gguf.GGUFWriter with one tensor of
random valid blocks per type, loaded with rlx.load_weights, must read back
bit for bit as gguf.quants.dequantize gives it. Then the bad files: a row
(ne[0]) that is not a whole number of blocks, data cut short by the end of
the file, and an unknown ggml type code, each refused with the file, the
tensor and the problem.

Needs the Python bindings (RLX_BUILD_DIR/python); skipped when the build has
none."""

import struct
import sys

import numpy as np
import pytest

from conftest import BUILD

gguf = pytest.importorskip("gguf")
from gguf import quants  # noqa: E402
from gguf.constants import (GGML_QUANT_SIZES,  # noqa: E402
                            GGMLQuantizationType as T)

if not (BUILD / "python" / "rlx").is_dir():
    pytest.skip(f"{BUILD / 'python'} has no rlx module (Python bindings off)",
                allow_module_level=True)
sys.path.insert(0, str(BUILD / "python"))
import rlx  # noqa: E402

# type -> offsets of the f16 scale fields in one block (ggml-common.h).
SCALES = {
    T.Q4_0: [0],
    T.Q4_1: [0, 2],
    T.Q5_0: [0],
    T.Q5_1: [0, 2],
    T.Q8_0: [0],
    T.Q2_K: [80, 82],
    T.Q3_K: [108],
    T.Q4_K: [0, 2],
    T.Q5_K: [0, 2],
    T.Q6_K: [208],
}
ROWS, COLS = 4, 512


def name_of(t):
    """ggml's spelling: q4_0, q2_K."""
    return t.name.lower().replace("_k", "_K")


def random_blocks(rng, t, rows, cols):
    """[rows, cols] elements of type `t` as random bytes whose f16 scales are
    finite (in [-2, 2]), shaped [rows, bytes per row] as GGUFWriter wants."""
    elements, size = GGML_QUANT_SIZES[t]
    blocks = rng.integers(0, 256, size=(rows * cols // elements, size),
                          dtype=np.uint8)
    for off in SCALES[t]:
        h = rng.uniform(-2, 2, size=blocks.shape[0]).astype(np.float16)
        blocks[:, off:off + 2] = h.view(np.uint8).reshape(-1, 2)
    return blocks.reshape(rows, cols // elements * size)


@pytest.fixture(scope="module")
def quant_file(tmp_path_factory):
    """(path, {tensor name: (type, bytes)}) of a GGUF with every type."""
    path = tmp_path_factory.mktemp("quant") / "types.gguf"
    rng = np.random.default_rng(7)
    writer = gguf.GGUFWriter(str(path), "rlxtest")
    tensors = {}
    for t in SCALES:
        data = random_blocks(rng, t, ROWS, COLS)
        name = f"w.{name_of(t)}"
        writer.add_tensor(name, data, raw_dtype=t)
        tensors[name] = (t, data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path, tensors


@pytest.mark.parametrize("qtype", list(SCALES), ids=name_of)
def test_dequantize_bit_exact(quant_file, qtype):
    path, tensors = quant_file
    name = f"w.{name_of(qtype)}"
    _, data = tensors[name]
    weights = rlx.load_weights(path)
    info = weights.info(name)
    assert info["dtype"] == name_of(qtype)
    assert tuple(info["shape"]) == (ROWS, COLS)
    got = np.asarray(weights[name])
    want = quants.dequantize(data, qtype)
    assert got.dtype == np.float32 and want.dtype == np.float32
    assert got.shape == want.shape == (ROWS, COLS)
    assert np.isfinite(want).all()
    diff = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
    assert diff.size == 0, (
        f"{diff.size} of {got.size} values differ; first at {diff[0]}: "
        f"{got.flat[diff[0]]!r} vs gguf-py {want.flat[diff[0]]!r}")


def test_all_types_listed(quant_file):
    path, tensors = quant_file
    weights = rlx.load_weights(path)
    assert sorted(weights.names()) == sorted(tensors)


#===----------------------------------------------------------------------===#
# Bad files
#===----------------------------------------------------------------------===#


def gguf_str(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def one_tensor_gguf(name, dims, gtype, data):
    """A GGUF v3 file, no metadata, one tensor at offset 0: `dims` fastest
    first (ne[0] first), `data` as the data section."""
    out = b"GGUF" + struct.pack("<IQQ", 3, 1, 0)
    out += gguf_str(name) + struct.pack("<I", len(dims))
    out += b"".join(struct.pack("<Q", d) for d in dims)
    out += struct.pack("<IQ", gtype, 0)
    out += b"\0" * ((32 - len(out) % 32) % 32)
    return out + data


def load_error(path):
    with pytest.raises(rlx.RLXError) as info:
        rlx.load_weights(path)
    return str(info.value)


PARTIAL_ROWS = [(T.Q5_K, 128), (T.Q2_K, 300), (T.Q5_1, 48), (T.Q4_1, 16)]


@pytest.mark.parametrize("qtype,ne0", PARTIAL_ROWS,
                         ids=[f"{name_of(t)}-{n}" for t, n in PARTIAL_ROWS])
def test_row_not_whole_blocks(tmp_path, qtype, ne0):
    elements, size = GGML_QUANT_SIZES[qtype]
    # Two rows: enough bytes for the element count, but each row ends
    # mid-block.
    bad = tmp_path / "partial.gguf"
    bad.write_bytes(one_tensor_gguf("blk.0.w", [ne0, 2], int(qtype),
                                    b"\0" * (4 * size)))
    assert load_error(bad) == (
        f"{bad}: tensor 'blk.0.w': last dimension {ne0} is not a multiple of "
        f"the {name_of(qtype)} block size {elements}")


def test_truncated_data(tmp_path):
    rng = np.random.default_rng(3)
    path = tmp_path / "cut.gguf"
    writer = gguf.GGUFWriter(str(path), "rlxtest")
    data = random_blocks(rng, T.Q3_K, 2, 512)
    writer.add_tensor("w.q3_K", data, raw_dtype=T.Q3_K)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    whole = path.read_bytes()
    assert len(whole) % 32 == 0 and data.nbytes == 4 * 110
    data_start = len(whole) - 448  # 440 bytes padded to 32
    path.write_bytes(whole[:-100])
    assert load_error(path) == (
        f"{path}: tensor 'w.q3_K': data at offset 0 (440 bytes) extends past "
        f"the end of the file ({len(whole) - 100} bytes, data section at "
        f"{data_start})")


@pytest.mark.parametrize("code", [99, 31, 2**32 - 1])
def test_unknown_type(tmp_path, code):
    bad = tmp_path / "unknown.gguf"
    bad.write_bytes(one_tensor_gguf("output.weight", [32], code, b"\0" * 64))
    assert load_error(bad) == (
        f"{bad}: tensor 'output.weight': unknown ggml type {code}")


def test_unsupported_type(tmp_path):
    bad = tmp_path / "q8_K.gguf"
    bad.write_bytes(one_tensor_gguf("w", [256], int(T.Q8_K), b"\0" * 292))
    assert load_error(bad) == (
        f"{bad}: tensor 'w': unsupported ggml type 15 (q8_K)")

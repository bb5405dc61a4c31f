# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Byte-level writers for the files RLX reads (safetensors, GGUF, .npy) and
the catalogue of bad variants of each, in plain Python (struct only, no
numpy), so that fuzz/make_corpus.py and test/Integration/test_bad_inputs.py
build exactly the same files.

Each `bad_*` generator yields (name, bytes) pairs; the names say what is
wrong and are used as file names.
"""

import json
import struct

#===----------------------------------------------------------------------===#
# safetensors
#===----------------------------------------------------------------------===#


def f32_bytes(values):
    return struct.pack(f"<{len(values)}f", *values)


def safetensors_raw(header, data=b"", header_len=None, pad=True):
    """A safetensors file from a header dict (or str) and a data section."""
    text = header if isinstance(header, str) else json.dumps(header)
    raw = text.encode()
    if pad:
        raw += b" " * ((8 - len(raw) % 8) % 8)
    n = len(raw) if header_len is None else header_len
    return struct.pack("<Q", n) + raw + data


def safetensors(tensors, metadata=None):
    """tensors: [(name, dtype, shape, data bytes)] packed in order."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, blob in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    return safetensors_raw(header, data)


def valid_safetensors():
    yield "two-f32", safetensors([
        ("w", "F32", [2, 2], f32_bytes([1, 2, 3, 4])),
        ("b", "F32", [2], f32_bytes([5, 6]))], {"format": "pt"})
    yield "f16-bf16-scalar-empty", safetensors([
        ("h", "F16", [3], struct.pack("<3H", 0x3c00, 0x4000, 0x7c00)),
        ("bf", "BF16", [2], struct.pack("<2H", 0x3f80, 0xc000)),
        ("s", "F32", [], f32_bytes([7])),
        ("e", "F32", [0, 4], b"")])
    yield "ints", safetensors([
        ("i", "I32", [2], struct.pack("<2i", -1, 2)),
        ("l", "I64", [1], struct.pack("<q", 3)),
        ("u", "U8", [2], b"\x01\x02"),
        ("t", "BOOL", [1], b"\x01"),
        ("d", "F64", [1], struct.pack("<d", 0.5))])


def bad_safetensors():
    """(name, bytes, expected message fragment) for every bad case."""
    good = safetensors([("w", "F32", [2, 2], f32_bytes([1, 2, 3, 4])),
                        ("b", "F32", [2], f32_bytes([5, 6]))])
    header_len = struct.unpack("<Q", good[:8])[0]
    # Truncated at every section boundary: in the length field, right after
    # it, inside the header, at the end of the header, inside each tensor.
    yield ("truncated-length", good[:5],
           "too few for the 8-byte header length")
    yield ("truncated-after-length", good[:8],
           f"header length {header_len} exceeds the 0 bytes")
    yield ("truncated-header", good[:8 + header_len // 2],
           f"header length {header_len} exceeds")
    yield ("truncated-data-start", good[:8 + header_len],
           "extend past the end of the data section (0 bytes)")
    yield ("truncated-mid-tensor", good[:8 + header_len + 20],
           "extend past the end of the data section (20 bytes)")
    yield ("header-length-huge", struct.pack("<Q", 2**63) + good[8:],
           f"header length {2**63} exceeds")
    yield ("header-not-json", safetensors_raw("{\"w\": [1, 2"),
           "header: invalid JSON")
    yield ("header-not-object", safetensors_raw("[1, 2, 3]"),
           "header: expected a JSON object, found an array")
    yield ("header-deep-nesting", safetensors_raw("[" * 100000 + "]" * 100000),
           "JSON nested deeper than 64 levels")
    yield ("offsets-past-end", safetensors_raw(
        {"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}},
        f32_bytes([1, 2])),
        "data_offsets [0, 16] extend past the end of the data section (8 bytes)")
    yield ("offsets-reversed", safetensors_raw(
        {"w": {"dtype": "F32", "shape": [0], "data_offsets": [8, 0]}},
        f32_bytes([1, 2])), "data_offsets [8, 0]: end is before begin")
    yield ("offsets-overlap", safetensors_raw(
        {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
         "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}},
        f32_bytes([1, 2, 3])), "tensor 'b': data_offsets [4, 12] overlap tensor 'a'")
    yield ("offsets-size-mismatch", safetensors_raw(
        {"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}},
        f32_bytes([1, 2])), "hold 8 bytes, but f32 shape [3] needs 12")
    yield ("offsets-negative", safetensors_raw(
        {"w": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}},
        f32_bytes([1])), "data_offsets[0] is negative")
    yield ("count-overflow", safetensors_raw(
        {"w": {"dtype": "F32", "shape": [2**32, 2**32], "data_offsets": [0, 0]}}),
        "element count of shape [4294967296, 4294967296] overflows 64 bits")
    yield ("bytes-overflow", safetensors_raw(
        {"w": {"dtype": "F64", "shape": [2**61], "data_offsets": [0, 0]}}),
        "byte size of 2305843009213693952 f64 elements overflows 64 bits")
    yield ("dim-absurd", safetensors_raw(
        {"w": {"dtype": "F32", "shape": [2**40], "data_offsets": [0, 8]}},
        f32_bytes([1, 2])), "f32 shape [1099511627776] needs 4398046511104")
    yield ("dim-negative", safetensors_raw(
        {"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}},
        f32_bytes([1])), "shape[0] is negative (-1)")
    yield ("dim-not-integer", safetensors_raw(
        {"w": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}},
        f32_bytes([1])), "shape[0] is not an integer")
    yield ("dtype-unknown", safetensors_raw(
        {"w": {"dtype": "F128", "shape": [1], "data_offsets": [0, 4]}},
        f32_bytes([1])), "unknown dtype 'F128'")
    yield ("dtype-unsupported", safetensors_raw(
        {"w": {"dtype": "F8_E4M3", "shape": [4], "data_offsets": [0, 4]}},
        f32_bytes([1])), "unsupported dtype 'F8_E4M3'")
    yield ("dtype-not-string", safetensors_raw(
        {"w": {"dtype": 4, "shape": [1], "data_offsets": [0, 4]}},
        f32_bytes([1])), "'dtype' is a number, expected a string")
    yield ("duplicate-name",
           safetensors_raw('{"w": {"dtype": "F32", "shape": [1], '
                           '"data_offsets": [0, 4]}, "w": {"dtype": "F32", '
                           '"shape": [1], "data_offsets": [4, 8]}}',
                           f32_bytes([1, 2])), "tensor 'w': duplicate name")
    yield ("missing-offsets", safetensors_raw(
        {"w": {"dtype": "F32", "shape": [1]}}, f32_bytes([1])),
        "missing 'data_offsets'")
    yield ("metadata-not-strings", safetensors_raw(
        {"__metadata__": {"format": 1}}), "'__metadata__' value of 'format'")


#===----------------------------------------------------------------------===#
# GGUF
#===----------------------------------------------------------------------===#

GGUF_UINT8, GGUF_INT8, GGUF_UINT16, GGUF_INT16, GGUF_UINT32, GGUF_INT32 = range(6)
GGUF_FLOAT32, GGUF_BOOL, GGUF_STRING, GGUF_ARRAY = 6, 7, 8, 9
GGUF_UINT64, GGUF_INT64, GGUF_FLOAT64 = 10, 11, 12
GGML_F32 = 0


def gguf_str(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


_SCALAR = {GGUF_UINT8: "B", GGUF_INT8: "b", GGUF_UINT16: "H", GGUF_INT16: "h",
           GGUF_UINT32: "I", GGUF_INT32: "i", GGUF_FLOAT32: "f", GGUF_BOOL: "B",
           GGUF_UINT64: "Q", GGUF_INT64: "q", GGUF_FLOAT64: "d"}


def gguf_value(vtype, value):
    if vtype == GGUF_STRING:
        return gguf_str(value)
    if vtype == GGUF_ARRAY:
        etype, items = value
        return (struct.pack("<IQ", etype, len(items)) +
                b"".join(gguf_value(etype, v) for v in items))
    return struct.pack("<" + _SCALAR[vtype], value)


def gguf_kv(key, vtype, value):
    return gguf_str(key) + struct.pack("<I", vtype) + gguf_value(vtype, value)


def gguf(kvs, tensors, align=32, version=3):
    """kvs: [(key, type, value)]; tensors: [(name, ggml type, shape in numpy
    order, data bytes)]. Returns (bytes, dict of section offsets)."""
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    marks = {"header": len(out)}
    for k in kvs:
        out += gguf_kv(*k)
    marks["kvs"] = len(out)
    offset, blobs = 0, []
    for name, gtype, shape, blob in tensors:
        out += gguf_str(name) + struct.pack("<I", len(shape))
        out += b"".join(struct.pack("<Q", d) for d in reversed(shape))
        out += struct.pack("<IQ", gtype, offset)
        blobs.append((offset, blob))
        offset += (len(blob) + align - 1) // align * align
    marks["infos"] = len(out)
    out += b"\0" * ((align - len(out) % align) % align)
    marks["data"] = len(out)
    for off, blob in blobs:
        out += blob + b"\0" * ((align - len(blob) % align) % align)
    return out, marks


def llama_gguf_parts(hidden=8, heads=2, kv_heads=1, ffn=16, vocab=16, layers=1,
                     ctx=64, extra_kvs=(), drop=()):
    """The metadata and tensors of a tiny llama GGUF (f32, zeros)."""
    head_dim = hidden // heads
    kvs = [("general.architecture", GGUF_STRING, "llama"),
           ("llama.embedding_length", GGUF_UINT32, hidden),
           ("llama.block_count", GGUF_UINT32, layers),
           ("llama.attention.head_count", GGUF_UINT32, heads),
           ("llama.attention.head_count_kv", GGUF_UINT32, kv_heads),
           ("llama.feed_forward_length", GGUF_UINT32, ffn),
           ("llama.context_length", GGUF_UINT32, ctx),
           ("llama.rope.freq_base", GGUF_FLOAT32, 10000.0),
           ("llama.attention.layer_norm_rms_epsilon", GGUF_FLOAT32, 1e-5)]
    kvs = [kv for kv in kvs if kv[0] not in drop] + list(extra_kvs)

    def t(name, shape):
        n = 1
        for d in shape:
            n *= d
        return (name, GGML_F32, shape, b"\0" * (4 * n))
    tensors = [t("token_embd.weight", [vocab, hidden]),
               t("output_norm.weight", [hidden])]
    for i in range(layers):
        p = f"blk.{i}."
        tensors += [t(p + "attn_norm.weight", [hidden]),
                    t(p + "attn_q.weight", [heads * head_dim, hidden]),
                    t(p + "attn_k.weight", [kv_heads * head_dim, hidden]),
                    t(p + "attn_v.weight", [kv_heads * head_dim, hidden]),
                    t(p + "attn_output.weight", [hidden, heads * head_dim]),
                    t(p + "ffn_norm.weight", [hidden]),
                    t(p + "ffn_gate.weight", [ffn, hidden]),
                    t(p + "ffn_up.weight", [ffn, hidden]),
                    t(p + "ffn_down.weight", [hidden, ffn])]
    return kvs, tensors


def llama_gguf(**kw):
    return gguf(*llama_gguf_parts(**kw))[0]


def valid_gguf():
    yield "llama-tiny", llama_gguf()
    yield "llama-gqa2-2layers", llama_gguf(heads=4, kv_heads=2, layers=2)
    kvs = [("general.alignment", GGUF_UINT32, 64),
           ("tokenizer.ggml.tokens", GGUF_ARRAY, (GGUF_STRING, ["a", "b"])),
           ("nested", GGUF_ARRAY, (GGUF_ARRAY, [(GGUF_INT8, [1, -2])])),
           ("flags", GGUF_ARRAY, (GGUF_BOOL, [0, 1])),
           ("f64", GGUF_FLOAT64, 0.25), ("i64", GGUF_INT64, -3)]
    yield "metadata-types", gguf(kvs, [("t", GGML_F32, [2], f32_bytes([1, 2]))],
                                 align=64)[0]


def bad_gguf():
    """(name, bytes, expected message fragment)."""
    good, marks = gguf(*llama_gguf_parts())
    # Truncated at every section boundary and inside each section.
    yield "truncated-magic", good[:2], "header: magic: unexpected end of file"
    yield "truncated-version", good[:6], "header: version: unexpected end of file"
    yield ("truncated-counts", good[:marks["header"] - 4],
           "header: metadata count: unexpected end of file")
    yield ("truncated-after-header", good[:marks["header"]],
           "metadata #0: key: string length: unexpected end of file")
    yield ("truncated-in-key", good[:marks["header"] + 12],
           "metadata #0: key: string length 20 exceeds the 4 bytes left")
    yield ("truncated-after-kvs", good[:marks["kvs"]],
           "tensor #0: name: string length: unexpected end of file")
    yield ("truncated-in-infos", good[:marks["kvs"] + 30],
           "tensor 'token_embd.weight': dimensions: unexpected end of file")
    yield ("truncated-after-infos", good[:marks["infos"]],
           "tensor 'token_embd.weight': data at offset 0 (512 bytes) extends "
           "past the end of the file")
    yield ("truncated-in-data", good[:marks["data"] + 100],
           "extends past the end of the file")
    yield "bad-magic", b"GGUG" + good[4:], "header: not a GGUF file (bad magic)"
    yield ("version-4", good[:4] + struct.pack("<I", 4) + good[8:],
           "header: unsupported GGUF version 4")
    yield ("big-endian", good[:4] + struct.pack(">I", 3) + good[8:],
           "(a big-endian file?)")
    h = b"GGUF" + struct.pack("<IQQ", 3, 0, 1)
    yield ("string-length-past-end",
           h + gguf_str("k") + struct.pack("<IQ", GGUF_STRING, 2**40) + b"abc",
           "metadata 'k': string length 1099511627776 exceeds the 3 bytes left")
    yield ("array-length-past-end",
           h + gguf_str("k") + struct.pack("<IIQ", GGUF_ARRAY, GGUF_UINT32, 2**62)
           + b"\0" * 8,
           "metadata 'k': array length 4611686018427387904 of uint32 exceeds")
    yield ("array-of-strings-past-end",
           h + gguf_str("k") + struct.pack("<IIQ", GGUF_ARRAY, GGUF_STRING, 2)
           + gguf_str("a") + struct.pack("<Q", 99) + b"xy",
           "metadata 'k'[1]: string length 99 exceeds the 2 bytes left")
    nested = struct.pack("<IQ", GGUF_ARRAY, 1) * 9 + struct.pack("<IQ", GGUF_UINT8, 0)
    yield ("array-nesting-too-deep",
           h + gguf_str("k") + struct.pack("<I", GGUF_ARRAY) + nested,
           "arrays nested deeper than 8")
    yield ("array-element-type-unknown",
           h + gguf_str("k") + struct.pack("<IIQ", GGUF_ARRAY, 13, 0),
           "metadata 'k': unknown array element type 13")
    yield ("value-type-unknown", h + gguf_str("k") + struct.pack("<I", 99),
           "metadata 'k': unknown value type 99")
    yield ("bool-not-0-or-1", h + gguf_str("k") + struct.pack("<IB", GGUF_BOOL, 7),
           "metadata 'k': bool value 7 is not 0 or 1")
    yield ("duplicate-key",
           b"GGUF" + struct.pack("<IQQ", 3, 0, 2) +
           gguf_kv("k", GGUF_UINT8, 1) + gguf_kv("k", GGUF_UINT8, 2),
           "metadata 'k': duplicate key")
    yield ("alignment-wrong-type",
           gguf([("general.alignment", GGUF_STRING, "32")], [])[0],
           "metadata 'general.alignment': expected an unsigned integer, found string")
    yield ("alignment-not-power-of-two",
           gguf([("general.alignment", GGUF_UINT32, 48)], [])[0],
           "metadata 'general.alignment': 48 is not a power of two")

    def one_tensor(name="t", dims=(2,), gtype=GGML_F32, offset=0, data=b"",
                   count=1, extra=b""):
        out = b"GGUF" + struct.pack("<IQQ", 3, count, 0)
        out += gguf_str(name) + struct.pack("<I", len(dims))
        out += b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", gtype, offset) + extra
        out += b"\0" * ((32 - len(out) % 32) % 32)
        return out + data
    yield ("tensor-offset-past-end", one_tensor(offset=64, data=f32_bytes([1, 2])),
           "tensor 't': data at offset 64 (8 bytes) extends past the end")
    yield ("tensor-offset-misaligned", one_tensor(offset=4, data=b"\0" * 16),
           "tensor 't': offset 4 is not a multiple of the alignment 32")
    yield ("tensor-offset-overflow", one_tensor(offset=2**64 - 32, data=b"\0" * 8),
           "tensor 't': data at offset 18446744073709551584 (8 bytes) extends "
           "past the end")
    yield ("tensor-dim-zero", one_tensor(dims=(4, 0)), "tensor 't': dims[1] is zero")
    yield ("tensor-dims-overflow", one_tensor(dims=(2**32, 2**32)),
           "element count of shape [4294967296, 4294967296] overflows 64 bits")
    yield ("tensor-dim-absurd", one_tensor(dims=(2**63,)),
           "tensor 't': dims[0] = 9223372036854775808 is too large")
    yield ("tensor-too-many-dims", one_tensor(dims=(1, 1, 1, 1, 1)),
           "tensor 't': 5 dimensions, at most 4 are supported")
    yield ("tensor-type-unknown", one_tensor(gtype=77, data=b"\0" * 8),
           "tensor 't': unknown ggml type 77")
    yield ("tensor-type-unsupported", one_tensor(gtype=9, data=b"\0" * 40),
           "tensor 't': unsupported ggml type 9 (q8_1)")
    yield ("tensor-quant-partial-block", one_tensor(dims=(16,), gtype=8, data=b"\0" * 34),
           "last dimension 16 is not a multiple of the q8_0 block size 32")
    dup = (gguf_str("t") + struct.pack("<IQIQ", 1, 2, GGML_F32, 0))
    yield ("tensor-duplicate-name",
           b"GGUF" + struct.pack("<IQQ", 3, 2, 0) + dup + dup + b"\0" * 64,
           "tensor 't': duplicate name")
    two = (gguf_str("a") + struct.pack("<IQIQ", 1, 16, GGML_F32, 0) +
           gguf_str("b") + struct.pack("<IQIQ", 1, 16, GGML_F32, 32))
    two = b"GGUF" + struct.pack("<IQQ", 3, 2, 0) + two
    yield ("tensor-overlap", two + b"\0" * ((32 - len(two) % 32) % 32) + b"\0" * 96,
           "tensor 'b': data at offset 32 overlaps tensor 'a' at offset 0 (64 bytes)")
    yield ("tensor-count-lies",
           b"GGUF" + struct.pack("<IQQ", 3, 2**60, 0),
           "tensor #0: name: string length: unexpected end of file")


def bad_llama_gguf():
    """GGUF files that parse but do not describe a llama model RLX can run:
    (name, bytes, expected message fragment)."""
    def make(**kw):
        return gguf(*llama_gguf_parts(**kw))[0]
    yield ("metadata-wrong-type", make(extra_kvs=[], drop=("llama.block_count",)) ,
           "metadata 'llama.block_count': missing")
    kvs, tensors = llama_gguf_parts()
    kvs = [(k, GGUF_STRING, "8") if k == "llama.embedding_length" else (k, t, v)
           for k, t, v in kvs]
    yield ("embedding-length-string", gguf(kvs, tensors)[0],
           "metadata 'llama.embedding_length': expected an unsigned integer, "
           "found string \"8\"")
    kvs, tensors = llama_gguf_parts()
    kvs = [(k, GGUF_STRING, "gpt2") if k == "general.architecture" else (k, t, v)
           for k, t, v in kvs]
    yield ("architecture-not-llama", gguf(kvs, tensors)[0],
           "metadata 'general.architecture': \"gpt2\" is not supported "
           "(supported: llama, qwen2, qwen3, gemma2, gemma3, phi3, "
           "bert)")
    kvs, tensors = llama_gguf_parts()
    kvs = [(k, GGUF_UINT32, 3) if k == "llama.attention.head_count" else (k, t, v)
           for k, t, v in kvs]
    yield ("heads-do-not-divide-hidden", gguf(kvs, tensors)[0],
           "llama.embedding_length 8 is not a multiple of "
           "llama.attention.head_count 3")
    kvs, tensors = llama_gguf_parts()
    kvs = [(k, GGUF_UINT32, 16) if k == "llama.embedding_length" else (k, t, v)
           for k, t, v in kvs]
    yield ("hidden-disagrees-with-embedding", gguf(kvs, tensors)[0],
           "tensor 'token_embd.weight': shape [16, 8] is not [vocab, "
           "llama.embedding_length = 16]")
    kvs, tensors = llama_gguf_parts()
    kvs = [(k, GGUF_UINT64, 2**40) if k == "llama.block_count" else (k, t, v)
           for k, t, v in kvs]
    yield ("block-count-absurd", gguf(kvs, tensors)[0],
           "'llama.block_count' = 1099511627776 is larger than 4096")
    kvs, tensors = llama_gguf_parts()
    kvs = [(k, GGUF_UINT32, 0) if k == "llama.attention.head_count_kv" else (k, t, v)
           for k, t, v in kvs]
    yield ("kv-heads-zero", gguf(kvs, tensors)[0],
           "metadata 'llama.attention.head_count_kv': must be positive")


#===----------------------------------------------------------------------===#
# .npy
#===----------------------------------------------------------------------===#


def npy(descr, shape, data, fortran=False, version=1, header=None):
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    text = header if header is not None else (
        "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }"
        % (descr, "True" if fortran else "False", dims))
    pre = 10 if version == 1 else 12
    text += " " * ((64 - (pre + len(text) + 1) % 64) % 64) + "\n"
    raw = text.encode()
    length = struct.pack("<H" if version == 1 else "<I", len(raw))
    return b"\x93NUMPY" + bytes([version, 0]) + length + raw + data


def valid_npy():
    yield "f32-1x3x4", npy("<f4", (1, 3, 4), f32_bytes(range(12)))
    yield "i32-ids", npy("<i4", (1, 3), struct.pack("<3i", 1, 2, 3))
    yield "i64-v2", npy("<i8", (2,), struct.pack("<2q", 4, 5), version=2)
    yield "f16-scalar", npy("<f2", (), struct.pack("<H", 0x3c00))
    yield "bool-empty", npy("|b1", (0, 3), b"")


def bad_npy():
    """(name, bytes, expected message fragment)."""
    yield "bad-magic", b"not a numpy file", "not a .npy file (bad magic)"
    yield ("truncated-length", b"\x93NUMPY\x01\x00\x10",
           "file ends inside the header length")
    good = npy("<f4", (2, 3), f32_bytes(range(6)))
    yield ("header-length-past-end", good[:8] + struct.pack("<H", 60000) + good[10:],
           "header length 60000 exceeds")
    yield ("version-9", good[:6] + b"\x09\x00" + good[8:],
           "unsupported .npy version 9.0")
    yield ("fortran-order", npy("<f4", (2, 3), f32_bytes(range(6)), fortran=True),
           "header: Fortran order is not supported")
    yield ("header-not-dict", npy("", (), b"", header="['descr', '<f4']"),
           "header: expected '{'")
    yield ("header-unknown-key",
           npy("", (), b"", header="{'descr': '<f4', 'fortran_order': False, "
               "'shape': (1,), 'extra': 1}"), "header: unknown key 'extra'")
    yield ("header-missing-shape",
           npy("", (), b"", header="{'descr': '<f4', 'fortran_order': False}"),
           "header: missing 'shape'")
    yield ("shape-not-integer", npy("", (), b"", header=
           "{'descr': '<f4', 'fortran_order': False, 'shape': (2.5,)}"),
           "header: expected ',' or ')' in 'shape'")
    yield ("shape-negative", npy("", (), b"", header=
           "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}"),
           "'shape' element is not a non-negative integer")
    yield ("shape-overflow", npy("<f4", (2**32, 2**32), b""),
           "element count of shape [4294967296, 4294967296] overflows 64 bits")
    yield ("descr-big-endian", npy(">f4", (1,), f32_bytes([1])),
           "header: unsupported descr '>f4'")
    yield ("descr-object", npy("|O", (1,), b"\0" * 8),
           "header: unsupported descr '|O'")
    yield ("data-short", good[:-4], "data has 20 bytes, but f32 shape [2, 3] needs 24")
    yield ("data-long", good + b"\0" * 4,
           "data has 28 bytes, but f32 shape [2, 3] needs 24")


#===----------------------------------------------------------------------===#
# HF config.json
#===----------------------------------------------------------------------===#

LLAMA_CONFIG = {
    "model_type": "llama", "vocab_size": 16, "hidden_size": 8,
    "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
    "num_key_value_heads": 1, "head_dim": 4, "max_position_embeddings": 64,
    "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": False,
}


def llama_tensors(cfg):
    """HF tensor names and shapes of a llama checkpoint for `cfg`."""
    h, f, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    heads = cfg["num_attention_heads"]
    kvh = cfg.get("num_key_value_heads", heads)
    hd = cfg.get("head_dim", h // heads)
    out = [("model.embed_tokens.weight", [v, h]), ("model.norm.weight", [h])]
    if not cfg.get("tie_word_embeddings"):
        out.append(("lm_head.weight", [v, h]))
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out += [(p + "input_layernorm.weight", [h]),
                (p + "post_attention_layernorm.weight", [h]),
                (p + "self_attn.q_proj.weight", [heads * hd, h]),
                (p + "self_attn.k_proj.weight", [kvh * hd, h]),
                (p + "self_attn.v_proj.weight", [kvh * hd, h]),
                (p + "self_attn.o_proj.weight", [h, heads * hd]),
                (p + "mlp.gate_proj.weight", [f, h]),
                (p + "mlp.up_proj.weight", [f, h]),
                (p + "mlp.down_proj.weight", [h, f])]
    return out


def llama_safetensors(cfg):
    """A model.safetensors for `cfg` with small deterministic values."""
    tensors = []
    for k, (name, shape) in enumerate(llama_tensors(cfg)):
        n = 1
        for d in shape:
            n *= d
        vals = [((i * 7 + k) % 13 - 6) / 50.0 for i in range(n)]
        if name.endswith("layernorm.weight") or name.endswith("norm.weight"):
            vals = [1.0] * n
        tensors.append((name, "F32", shape, f32_bytes(vals)))
    return safetensors(tensors)


def valid_configs():
    yield "llama", dict(LLAMA_CONFIG)
    yield "llama3-rope", dict(LLAMA_CONFIG, rope_scaling={
        "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
        "high_freq_factor": 4.0, "original_max_position_embeddings": 32})
    yield "qwen3", dict(LLAMA_CONFIG, model_type="qwen3", rms_norm_eps=1e-6)
    yield "gemma2", dict(LLAMA_CONFIG, model_type="gemma2", num_hidden_layers=2,
                         sliding_window=4, query_pre_attn_scalar=4,
                         final_logit_softcapping=30.0,
                         attn_logit_softcapping=50.0,
                         layer_types=["sliding_attention", "full_attention"])
    yield "bert", {"model_type": "bert", "vocab_size": 16, "hidden_size": 8,
                   "intermediate_size": 16, "num_hidden_layers": 1,
                   "num_attention_heads": 2, "max_position_embeddings": 32,
                   "type_vocab_size": 2, "layer_norm_eps": 1e-12,
                   "hidden_act": "gelu"}


def bad_configs():
    """(name, config.json text, expected message fragment)."""
    def cfg(**kw):
        c = dict(LLAMA_CONFIG)
        for k, v in kw.items():
            if v is None:
                c.pop(k)
            else:
                c[k] = v
        return json.dumps(c)
    yield "not-json", "{\"model_type\": ", "invalid JSON"
    yield "not-object", "[1, 2]", "a config must be a JSON object"
    yield "deep-nesting", "[" * 100000, "JSON nested deeper than 64 levels"
    yield "missing-model-type", cfg(model_type=None), "missing 'model_type'"
    yield "missing-hidden", cfg(hidden_size=None), "missing 'hidden_size'"
    yield ("hidden-string", cfg(hidden_size="8"),
           "'hidden_size' must be a positive integer")
    yield ("heads-zero", cfg(num_attention_heads=0),
           "'num_attention_heads' must be a positive integer")
    yield ("kv-heads-do-not-divide", cfg(num_key_value_heads=3),
           "num_key_value_heads (3) must divide num_attention_heads (2)")
    yield ("eps-string", cfg(rms_norm_eps="small"), "'rms_norm_eps' must be a number")
    yield ("rope-type-unknown", cfg(rope_scaling={"rope_type": "ntk"}),
           "'rope_scaling.rope_type' = \"ntk\" is not supported")
    yield ("layers-absurd", cfg(num_hidden_layers=10**9),
           "'num_hidden_layers' = 1000000000 is larger than 4096")
    yield ("head-dim-absurd", cfg(head_dim=2**40),
           "'head_dim' = 1099511627776 is larger than 2147483647")

# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""CompileProfile from presets and TOML; errors carry file:line:col."""

import pathlib

import pytest

import rlx

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_presets():
    names = rlx.CompileProfile.presets()
    assert names[0] == "llama32_prefill" and "encoder" in names
    assert rlx.CompileProfile.preset("llama32_decode").fusion.policy == "fusable"
    assert rlx.CompileProfile.preset("llama32_prefill") == rlx.CompileProfile()
    with pytest.raises(
        ValueError, match=r"unknown preset 'nope' \(expected one of llama32_prefill"
    ):
        rlx.CompileProfile.preset("nope")


def test_toml_round_trip():
    for name in rlx.CompileProfile.presets():
        p = rlx.CompileProfile.preset(name)
        assert rlx.CompileProfile.from_toml(p.to_toml()) == p


def test_fields():
    p = rlx.CompileProfile()
    p.fusion.policy = "fusable"
    p.fusion.disable = ["swiglu", "attention"]
    p.backend.cpu.threads = 2
    p.backend.spirv.device = "llvmpipe"
    p.precision.compute = "f16"
    p.passes.dce = False
    d = p.to_dict()
    assert d["fusion"]["policy"] == "fusable"
    assert d["fusion"]["disable"] == ["swiglu", "attention"]
    assert d["backend"]["cpu"]["threads"] == 2
    assert d["backend"]["spirv"]["device"] == "llvmpipe"
    assert d["precision"]["compute"] == "f16" and d["passes"]["dce"] is False
    assert rlx.CompileProfile.from_toml(p.to_toml()) == p
    q = p.copy()
    q.fusion.skip = True
    assert not p.fusion.skip and q != p
    with pytest.raises(
        ValueError,
        match=r"policy: unknown value 'fast' \(expected one of: direct, fusable\)",
    ):
        p.fusion.policy = "fast"
    with pytest.raises(ValueError, match="unknown fusion pattern 'nope'"):
        p.fusion.disable = ["nope"]
    assert "swiglu" in rlx.known_fusion_patterns()


def test_parallel_and_attention_rows_fields():
    """The `[parallel]` table and `[backend.cpu] attention_rows` read, write
    and round-trip through TOML like the other fields."""
    p = rlx.CompileProfile()
    assert p.parallel.tensor == 1 and p.parallel.overlap_chunks == 1
    assert p.backend.cpu.attention_rows == 0
    p.parallel.tensor = 2
    p.parallel.overlap_chunks = 2
    p.backend.cpu.attention_rows = 3
    d = p.to_dict()
    assert d["parallel"] == {"tensor": 2, "overlap_chunks": 2}
    assert d["backend"]["cpu"]["attention_rows"] == 3
    text = p.to_toml()
    assert "overlap_chunks = 2" in text and "attention_rows = 3" in text
    assert rlx.CompileProfile.from_toml(text) == p
    with pytest.raises(rlx.RLXError,
                       match="'parallel.overlap_chunks' must be between 1 "
                             "and 64, got 0"):
        rlx.CompileProfile.from_toml("[parallel]\noverlap_chunks = 0\n")


def test_toml_errors_have_locations():
    with pytest.raises(rlx.RLXError) as e:
        rlx.CompileProfile.from_toml('[fusion]\npolcy = "direct"\n', "my.rlx.toml")
    assert (
        str(e.value)
        == "my.rlx.toml:2:1: unknown key 'fusion.polcy'; did you mean 'policy'?"
    )
    with pytest.raises(rlx.RLXError) as e:
        rlx.CompileProfile.from_toml('[passes]\ndce = "yes"\n[fusoin]\n')
    lines = str(e.value).splitlines()
    assert lines[0] == "<string>:2:7: 'passes.dce' must be a boolean, got string"
    assert lines[1].startswith("<string>:3:2: unknown table 'fusoin'")


def test_from_file(tmp_path):
    for path in (ROOT / "examples" / "profiles").glob("*.rlx.toml"):
        rlx.CompileProfile.from_file(path)
    bad = tmp_path / "bad.rlx.toml"
    bad.write_text("[passes]\ndce = 1\n")
    with pytest.raises(
        rlx.RLXError,
        match=r"bad.rlx.toml:2:7: 'passes.dce' must be a boolean, got integer",
    ):
        rlx.CompileProfile.from_file(bad)
    with pytest.raises(rlx.RLXError, match="cannot read file"):
        rlx.CompileProfile.from_file(tmp_path / "missing.rlx.toml")
    # Over a base, the keys the file does not set keep the base's.
    threads = tmp_path / "threads.rlx.toml"
    threads.write_text("[backend.cpu]\nthreads = 2\n")
    decode = rlx.CompileProfile.preset("llama32_decode")
    got = rlx.CompileProfile.from_file(threads, base=decode)
    assert got.fusion.policy == "fusable" and got.backend.cpu.threads == 2
    assert rlx.CompileProfile.from_file(threads).fusion.policy == "direct"
    # A .toml path works wherever a profile is taken.
    flow = rlx.ModelFlow("m").profile(
        str(ROOT / "examples" / "profiles" / "bert-encoder.rlx.toml")
    )
    assert flow.compile_profile == rlx.CompileProfile.from_file(
        ROOT / "examples" / "profiles" / "bert-encoder.rlx.toml"
    )

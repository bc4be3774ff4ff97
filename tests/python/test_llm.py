"""`mempath llm` (issue 48): the LLM decode a family of the one driver. Without a GPU: its
plan on the reference nodes (every placement and offload way, what does not fit skipped with
the reason), bad input in one line, the bound of each way; on a GPU (marked `gpu`): the tokens
of every way checked by the PyTorch referee, and the recorded runs' figures."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import REPO, run

FIXTURES = REPO / "tests" / "fixtures"
PLAN = re.compile(r"^PLAN llm (.*)$", re.M)


def plans(binary: Path, fixture: str, *args: str) -> tuple[list[dict[str, str]], str]:
    """The PLAN lines of `llm ARGS --from FIXTURE`, as dicts, and the EXPECT line."""
    out = run(binary, "llm", *args, "--from", str(FIXTURES / fixture)).stdout
    rows = [dict(kv.split("=", 1) for kv in re.findall(r'(\w+=(?:"[^"]*"|\S+))', m)) for m in PLAN.findall(out)]
    expect = next(line for line in out.splitlines() if line.startswith("EXPECT llm"))
    return rows, expect


def test_placements_name_the_memory_each_node_gives_them(mempath_bin: Path) -> None:
    rows, _ = plans(mempath_bin, "x86_2s_4gpu", "--model", "tiny", "--gpu", "3",
                    "--placement", "hbm,host,host-remote,peer,default")
    where = {r["placement"]: (r["mem"], r["alloc"]) for r in rows}
    assert where["hbm"] == ("gpu3", "device") and where["default"] == ("gpu3", "device")
    assert where["host"][1] == "pinned" and where["host-remote"][0] != where["host"][0]  # the far socket
    assert where["peer"][0].startswith("gpu") and where["peer"][0] != "gpu3"
    # On GH200 the GPU reads the Grace's memory through ATS: numa_alloc_onnode, no pinning.
    rows, _ = plans(mempath_bin, "gh200_quad", "--model", "tiny", "--gpu", "1", "--placement", "hbm,host")
    assert {r["placement"]: r["alloc"] for r in rows} == {"hbm": "device", "host": "numa"}


def test_a_placement_or_offload_that_does_not_fit_is_skipped_with_the_reason(mempath_bin: Path) -> None:
    # 138 GB of Llama-2-70B in an H100's 80 GB: all in HBM does not fit; a third offloaded does not
    # either; two thirds does (the plan reads the snapshot's sizes).
    rows, expect = plans(mempath_bin, "x86_h100", "--model", "llama-2-70b", "--dtype", "fp16",
                         "--placement", "hbm", "--offload", "33%,67%", "--way", "in-place")
    status = {(r["placement"], r.get("offload_layers")): r for r in rows}
    hbm = status["hbm", None]
    assert hbm["status"] == "skipped" and "does not fit" in hbm["reason"] and "--offload" in hbm["reason"]
    assert status["offload", "26"]["status"] == "skipped" and "offload more layers" in status["offload", "26"]["reason"]
    assert status["offload", "54"]["status"] == "planned"
    assert "planned=1 skipped=2" in expect


def test_every_way_of_an_offload_sweep_is_planned_mempaths_first(mempath_bin: Path) -> None:
    rows, expect = plans(mempath_bin, "x86_h100", "--model", "llama-2-7b", "--dtype", "fp16", "--offload", "sweep")
    points = [(r["way"], int(r["offload_layers"])) for r in rows]
    ways = [w for w, _ in points]
    assert ways.index("vllm") > max(i for i, w in enumerate(ways) if w != "vllm")  # PyTorch's after mempath's
    assert sorted({k for _, k in points}) == [0, 3, 6, 10, 13, 16, 19, 22, 26, 29, 32]
    assert len(points) == 33 and "planned=33" in expect
    # nothing but the offload sweep where --offload is given alone
    assert {r["placement"] for r in rows} == {"offload"}


def test_streaming_from_pageable_memory_is_skipped_with_what_is_valid(mempath_bin: Path) -> None:
    rows, _ = plans(mempath_bin, "gh200_quad", "--model", "tiny", "--gpu", "1", "--offload", "all",
                    "--offload-to", "system:numa1", "--way", "in-place,streamed")
    by_way = {r["way"]: r for r in rows}
    assert by_way["in-place"]["status"] == "planned"  # read in place through ATS
    assert by_way["streamed"]["status"] == "skipped" and "pinned:MEM" in by_way["streamed"]["reason"]


def modelled_gain(binary: Path, fixture: str, offload: str) -> dict[int, float]:
    """Streamed over in place, the plan's modelled tokens/s, per offloaded layers."""
    rows, _ = plans(binary, fixture, "--model", "llama-2-7b", "--dtype", "bf16", "--offload", offload,
                    "--way", "in-place,streamed")
    rate = {(r["way"], int(r["offload_layers"])): float(r["modelled_bound_tokens_per_s"]) for r in rows}
    return {k: rate["streamed", k] / rate["in-place", k] for (w, k) in rate if w == "in-place"}


def test_the_plan_models_streaming_at_most_twice_in_place_where_the_parts_are_equal(mempath_bin: Path) -> None:
    # The model of a GH200: streaming hides the offloaded bytes behind the HBM part's
    # reads, so it gains at most 2x, near where both take as long: a tenth of the layers over
    # C2C (~450 GB/s beside ~4,000), a few hundredths over PCIe.
    gh200 = modelled_gain(mempath_bin, "gh200_quad", "sweep")
    assert all(0.95 <= g <= 2.0 for g in gh200.values()), gh200
    assert max(gh200, key=gh200.get) in (3, 6)  # 10 % or 20 % of 32 layers
    assert gh200[32] == pytest.approx(1.0, abs=0.05)  # all offloaded: nothing to hide behind
    pcie = modelled_gain(mempath_bin, "x86_h100", "3%,6%,9%,19%")  # 1, 2, 3, 6 layers
    assert max(pcie, key=pcie.get) == 1 and pcie[6] < gh200[6]


def test_no_referee_skips_pytorchs_cases_and_says_why(mempath_bin: Path) -> None:
    rows, _ = plans(mempath_bin, "x86_h100", "--model", "tiny", "--placement", "hbm,default", "--offload", "all",
                    "--way", "vllm", "--referee", "none")
    skipped = {r["placement"] for r in rows if r["status"] == "skipped"}
    assert skipped == {"default", "offload"}
    assert all("--referee none" in r["reason"] for r in rows if r["status"] == "skipped")


@pytest.mark.parametrize("args, valid", [
    (["--model", "gpt-5"], "valid: tiny, llama-3.2-1b"),
    (["--dtype", "fp8"], "valid: fp16, bf16"),
    (["--offload", "150%"], "valid: a share of the layers"),
    (["--offload", "all", "--way", "fast"], "valid: in-place, streamed, vllm"),
    (["--placement", "gpu0"], "valid: hbm, host, host-remote, peer, default, ALLOC:MEM"),
    (["--placement", "pinned:numa9"], "no memory numa9; valid: numa0, gpu0"),
    (["--prompt-tokens", "lots"], "valid: empty"),
    (["--new-tokens", "2"], "valid: 5 .. 65536"),
    (["--ring", "0"], "valid: auto or 1"),
])
def test_bad_input_is_one_line_that_says_what_is_valid(mempath_bin: Path, args: list[str], valid: str) -> None:
    proc = run(mempath_bin, "llm", *args, "--from", str(FIXTURES / "x86_h100"), check_rc=2)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and valid in lines[0], proc.stderr


# ---- on a GPU: the tokens of every way, checked by the PyTorch referee --------------------------

@pytest.mark.gpu
def test_every_way_of_a_tiny_model_decodes_the_referees_tokens(mempath_bin: Path, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "tiny.h5"
    proc = run(mempath_bin, "llm", "--model", "tiny", "--placement", "hbm,host,default", "--offload", "50%,all",
               "--prompt-tokens", "8", "--new-tokens", "16", "--reps", "1", "--warmup", "0", "--output", str(out))
    from analysis.results.io import load_run
    cases = load_run(out).tables["llm/cases"]
    assert set(cases["status"]) == {"ok"}, cases[["placement", "way", "status", "reason"]].to_string()
    assert cases["verified"].all() and (cases["tokens_wrong"] == 0).all()
    streamed = cases[cases["way"] == "streamed"]
    assert (streamed["ring_slots"] >= 1).all() and streamed["cuda_graph"].all()
    assert "MEMPATH llm" in proc.stdout


# ---- the recorded runs (one H100, 2026-12-07): the figure drawn from them ----------------------

RECORDED = REPO / "docs" / "results" / "raw" / "2026-12-07-llm-offload-h100" / "call2"


def test_the_offload_figure_is_drawn_from_the_recorded_run_and_says_what_it_read(tmp_path: Path) -> None:
    import pandas as pd
    from analysis.results.io import load_run
    from conftest import analysis_cli
    files = [RECORDED / f"{n}.h5" for n in ("sweep_7b", "sweep_13b", "big_70b", "vllm_7b")]
    proc = analysis_cli("report", *files, "-o", tmp_path)
    assert proc.returncode == 0, proc.stderr
    drawn = pd.read_csv(tmp_path / "llm_offload.csv")
    cases = pd.concat([load_run(f).tables["llm/cases"] for f in files])
    ok = cases[cases["status"] == "ok"]
    # a point a (model, way, offload) the run measured, its time the inverse of its tokens/s
    assert len(drawn) == len(ok.groupby(["model", "way", "offload_bytes"]))
    for _, row in drawn.iterrows():
        mine = ok[(ok["model"] == row["model"]) & (ok["way"] == row["way"]) &
                  ((ok["offload_bytes"] / 1e9 - row["offload_GB"]).abs() < 1e-3)]
        assert row["ms_per_token"] == pytest.approx(1e3 / mine["median_tokens_per_s"].median(), rel=1e-6)
    # the model that does not fit the H100 (138 GB of 70B) ran both ways, at >= 90 % of each bound
    big = ok[ok["model"] == "llama-2-70b"]
    assert set(big["way"]) == {"in-place", "streamed"} and (big["fraction_of_bound"] >= 0.9).all()
    page = (tmp_path / "index.md").read_text()
    assert "pinned memory over pcie" in page and "GB/s by the copy engines" in page

"""`mempath memcpy` end to end: bad input and planning (everywhere, against the reference
snapshots), the CPU-only build's refusal, and on a GPU node the transfers themselves,
their HDF5 tables and summary lines (marked `gpu`)."""
from __future__ import annotations

import json
import math
import re
import shlex
from pathlib import Path

import h5py
import numpy as np
import pytest

from conftest import HAVE_GPU, REPO
from conftest import run

FIXTURES = REPO / "tests" / "fixtures"
SUMMARY = re.compile(r"^MEMPATH memcpy (?P<kv>.*)$", re.M)
GPU_SMALL = ["--size", "64MiB", "--reps", "5", "--warmup", "1"]


def summaries(stdout: str) -> list[dict[str, str]]:
    out = []
    for m in SUMMARY.finditer(stdout):
        kv = dict(re.findall(r'(\w+)=("[^"]*"|\S+)', m.group("kv")))
        out.append({k: v.strip('"') for k, v in kv.items()})
    return out


def table(path: Path, name: str) -> dict[str, np.ndarray]:
    with h5py.File(path) as f:
        cols = {k: f[f"memcpy/{name}"][k][()] for k in f[f"memcpy/{name}"]}
    return {k: np.array([x.decode() for x in v]) if v.dtype.kind == "O" else v for k, v in cols.items()}


def one_line_error(proc) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mempath: error:"), proc.stderr
    return lines[0]


# --- everywhere: the CPU-only build, and planning against snapshots ----------------------

def test_cpu_only_build_says_it_has_no_cuda(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    line = one_line_error(run(mempath_cpu_bin, "memcpy", check_rc=None))
    assert "no CUDA" in line
    line = one_line_error(run(mempath_cpu_bin, "memcpy", "--direction", "h2d", "--output",
                              str(tmp_path / "x.h5"), check_rc=None))
    assert "no CUDA" in line
    assert not (tmp_path / "x.h5").exists()


def test_help_works_in_every_build(mempath_cpu_bin: Path) -> None:
    out = run(mempath_cpu_bin, "memcpy", "--help").stdout
    for option in ("--gpu", "--all-gpus", "--mem", "--cpu-numa", "--alloc", "--direction", "--engine",
                   "--sweep", "--max-size", "--latency"):
        assert option in out
    assert "memcpy" in run(mempath_cpu_bin, "--help").stdout


def memcpy_plan(binary: Path, fixture: str | Path, *args: str) -> list[dict[str, str]]:
    """The `PLAN memcpy key=value ... status=... [reason="..."]` lines of `--from fixture`."""
    rows = []
    lines = run(binary, "memcpy", "--from", str(fixture), *args).stdout.splitlines()
    assert lines and lines[-1].startswith("EXPECT memcpy "), lines  # the plan's last line
    for line in lines[:-1]:
        assert line.startswith("PLAN memcpy "), line
        rows.append(dict(word.split("=", 1) for word in shlex.split(line)[2:]))
    return rows


def test_plan_on_the_h100_snapshot(mempath_cpu_bin: Path) -> None:
    rows = memcpy_plan(mempath_cpu_bin, FIXTURES / "x86_h100", "--alloc", "pinned,system")
    assert len(rows) == 12  # 2 allocs x 3 directions x 2 engines
    pageable_sm = [r for r in rows if r["alloc"] == "system" and r["engine"] == "sm"]
    assert pageable_sm and all(r["status"] == "skipped" and "pageable" in r["reason"] for r in pageable_sm)
    assert all(r["status"] == "planned" for r in rows if r["alloc"] == "pinned")


def test_plan_all_gpus_on_a_quad_gh200(mempath_cpu_bin: Path) -> None:
    rows = memcpy_plan(mempath_cpu_bin, FIXTURES / "gh200_quad", "--all-gpus", "--direction", "bidir", "--engine", "ce")
    assert len(rows) == 1 and rows[0]["gpu"] == "all" and rows[0]["via"] == "c2c"


def test_plan_sweep_sizes(mempath_cpu_bin: Path) -> None:
    rows = memcpy_plan(mempath_cpu_bin, FIXTURES / "x86_h100", "--sweep", "--max-size", "1MiB", "--direction", "h2d",
                       "--engine", "ce")
    assert [int(r["size"]) for r in rows] == [4096 << i for i in range(9)]  # 4 KiB .. 1 MiB


H100 = str(FIXTURES / "x86_h100")
QUAD = str(FIXTURES / "gh200_quad")
BAD_INPUT = [
    (["--from", H100, "--gpu", "3"], "valid --gpu: gpu0"),
    (["--from", H100, "--mem", "numa9"], "valid --mem: numa0"),
    (["--from", QUAD, "--mem", "numa6"], "without memory"),
    (["--from", QUAD, "--cpu-numa", "4"], "without CPUs"),
    (["--from", H100, "--cpu-numa", "7"], "no such NUMA node"),
    (["--from", H100, "--direction", "h2h"], "valid: h2d, d2h, bidir"),
    (["--from", H100, "--engine", "dma"], "valid: ce, sm"),
    (["--from", H100, "--alloc", "device"], "valid: pinned, registered, system, managed"),
    (["--from", H100, "--latency", "--direction", "bidir"], "bidir makes no sense"),
    (["--from", H100, "--latency", "--engine", "sm"], "--engine sm does not apply"),
    (["--from", H100, "--sweep", "--size", "1MiB"], "does not combine with --size"),
    (["--from", H100, "--sweep", "--max-size", "1KiB"], "at least 4KiB"),
    (["--from", H100, "--max-size", "1GiB"], "add --sweep"),
    (["--from", H100, "--size", "1TiB"], "exceeds GPU 0"),
    (["--from", H100, "--size", "0"], "bytes >= 1"),
    (["--from", H100, "--all-gpus", "--gpu", "0"], "--all-gpus"),
    (["--from", H100, "--reps", "0"], "from 1 to"),
    (["--from", H100, "--op", "read"], "unknown option --op"),
]


@pytest.mark.parametrize("args,hint", BAD_INPUT)
def test_bad_input_is_one_line_and_exit_2(mempath_cpu_bin: Path, args: list[str], hint: str) -> None:
    assert hint in one_line_error(run(mempath_cpu_bin, "memcpy", *args, check_rc=None))


@pytest.mark.skipif(HAVE_GPU, reason="this node has a GPU")
def test_cuda_build_on_a_node_without_gpu(mempath_bin: Path, tmp_path: Path) -> None:
    line = one_line_error(run(mempath_bin, "memcpy", "--output", str(tmp_path / "x.h5"), check_rc=None))
    assert "no CUDA" in line


# --- on a GPU node ----------------------------------------------------------------------

def topology(binary: Path) -> dict:
    return json.loads(run(binary, "topo", "--json").stdout)


@pytest.mark.gpu
@pytest.mark.parametrize("direction", ["h2d", "d2h"])
@pytest.mark.parametrize("engine", ["ce", "sm"])
def test_one_direction_writes_summary_and_tables(mempath_bin: Path, tmp_path: Path, direction: str,
                                                 engine: str) -> None:
    out = tmp_path / "m.h5"
    proc = run(mempath_bin, "memcpy", "--direction", direction, "--engine", engine, *GPU_SMALL,
               "--output", str(out))
    (line,) = summaries(proc.stdout)
    assert line["status"] == "ok", line
    assert line["direction"] == direction and line["engine"] == engine and line["gpu"] == "0"
    assert float(line["median_GBps"]) > 1
    assert line["saturation_bytes"] == "-1"
    s = table(out, "samples")
    assert len(s["rep"]) == 5 and set(s["part"]) == {direction}
    np.testing.assert_allclose(s["bandwidth_GBps"], s["bytes"] / s["time_s"] / 1e9)
    assert (s["bytes"] == 64 << 20).all() and (s["timing"] == "events").all()
    c = table(out, "cases")
    assert c["verified"][0] == 1 and c["status"][0] == "ok"
    assert c["placement"][0].startswith("numa")
    assert math.isclose(c["median_GBps"][0], float(np.median(s["bandwidth_GBps"])), rel_tol=1e-9)
    assert (c["sm_threads"][0] > 0) == (engine == "sm")
    with h5py.File(out) as f:
        assert f.attrs["schema_version"] == 1
        assert f["memcpy/samples/time_s"].attrs["units"] == "s"


@pytest.mark.gpu
@pytest.mark.parametrize("engine", ["ce", "sm"])
def test_bidirectional_reports_each_direction_and_the_sum(mempath_bin: Path, tmp_path: Path,
                                                          engine: str) -> None:
    out = tmp_path / "b.h5"
    proc = run(mempath_bin, "memcpy", "--direction", "bidir", "--engine", engine, *GPU_SMALL,
               "--output", str(out))
    (line,) = summaries(proc.stdout)
    assert line["status"] == "ok", line
    assert float(line["h2d_median_GBps"]) > 1 and float(line["d2h_median_GBps"]) > 1
    s = table(out, "samples")
    assert sorted(set(s["part"])) == ["d2h", "h2d", "total"]
    for rep in range(5):
        parts = {p: b for p, b, r in zip(s["part"], s["bandwidth_GBps"], s["rep"]) if r == rep}
        assert math.isclose(parts["total"], parts["h2d"] + parts["d2h"], rel_tol=1e-9)
    total = s["part"] == "total"
    np.testing.assert_allclose(s["bandwidth_GBps"][total], s["bytes"][total] / s["time_s"][total] / 1e9)
    c = table(out, "cases")
    assert c["verified"][0] == 1
    assert math.isclose(c["median_GBps"][0], float(np.median(s["bandwidth_GBps"][total])), rel_tol=1e-9)


@pytest.mark.gpu
def test_sweep_reports_the_saturation_size(mempath_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "s.h5"
    proc = run(mempath_bin, "memcpy", "--sweep", "--max-size", "32MiB", "--direction", "h2d,d2h",
               "--engine", "ce", "--reps", "5", "--warmup", "1", "--output", str(out))
    lines = summaries(proc.stdout)
    assert len(lines) == 2 * 14  # 4KiB .. 32MiB, two directions
    c = table(out, "cases")
    for direction in ("h2d", "d2h"):
        mine = c["direction"] == direction
        sizes, medians = c["size_bytes"][mine], c["median_GBps"][mine]
        assert list(sizes) == sorted(sizes)
        expected = min(s for s, m in zip(sizes, medians) if m >= 0.95 * medians.max())
        assert set(c["saturation_bytes"][mine]) == {expected}
        assert {l["saturation_bytes"] for l in lines if l["direction"] == direction} == {str(expected)}
    assert (c["verified"] == 1).all()


@pytest.mark.gpu
def test_latency_keeps_every_sample(mempath_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "l.h5"
    proc = run(mempath_bin, "memcpy", "--latency", "--reps", "50", "--warmup", "5", "--output", str(out))
    lines = summaries(proc.stdout)
    assert len(lines) == 2 * 19
    assert all(l["status"] == "ok" and l["mode"] == "latency" for l in lines), lines
    assert 0.5 < float(lines[0]["median_us"]) < 1000
    s, c = table(out, "samples"), table(out, "cases")
    assert len(s["rep"]) == 50 * 2 * 19 and (s["timing"] == "host").all()
    first = s["case_id"] == 0
    times = np.sort(s["time_s"][first])
    assert c["p99_time_s"][0] == times[math.ceil(0.99 * len(times)) - 1]
    assert c["size_bytes"][0] == 4 and (c["verified"] == 1).all()


@pytest.mark.gpu
@pytest.mark.parametrize("alloc", ["registered", "system", "managed"])
def test_host_allocators(mempath_bin: Path, alloc: str) -> None:
    gpu = next(p for p in topology(mempath_bin)["processors"] if p["name"] == "gpu0")
    proc = run(mempath_bin, "memcpy", "--alloc", alloc, *GPU_SMALL)
    for line in summaries(proc.stdout):
        if alloc == "system" and line["engine"] == "sm" and not gpu["pageable_access"]:
            assert line["status"] == "skipped" and "pageable" in line["reason"]
        elif alloc in ("system", "managed") and line["engine"] == "ce" and line["direction"] == "bidir":
            assert line["status"] == "skipped" and "blocks the issuing thread" in line["reason"]
        else:
            assert line["status"] == "ok", line
            host_timed = alloc in ("system", "managed") and line["engine"] == "ce"
            assert line["timing"] == ("host" if host_timed else "events")


@pytest.mark.gpu
def test_all_gpus_at_once(mempath_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "a.h5"
    proc = run(mempath_bin, "memcpy", "--all-gpus", "--direction", "h2d", "--engine", "ce", *GPU_SMALL,
               "--output", str(out))
    (line,) = summaries(proc.stdout)
    assert line["status"] == "ok" and line["gpu"] == "all"
    c = table(out, "cases")
    assert c["all_gpus"][0] == 1 and c["gpu"][0] == -1


@pytest.mark.gpu
def test_issuing_thread_node_is_recorded(mempath_bin: Path, tmp_path: Path) -> None:
    node = next(n["id"] for n in topology(mempath_bin)["numa_nodes"] if n["cpus"])
    out = tmp_path / "c.h5"
    proc = run(mempath_bin, "memcpy", "--cpu-numa", str(node), "--direction", "h2d", "--engine", "ce",
               *GPU_SMALL, "--output", str(out))
    (line,) = summaries(proc.stdout)
    assert line["cpu_numa"] == str(node)
    assert set(table(out, "samples")["cpu_numa"]) == {node}


@pytest.mark.gpu
@pytest.mark.parametrize("args,hint", [
    (["--gpu", "99"], "valid --gpu"),
    (["--mem", "numa999"], "valid --mem"),
    (["--size", "64TiB"], "exceeds"),
])
def test_bad_input_on_the_gpu_node(mempath_bin: Path, tmp_path: Path, args: list[str], hint: str) -> None:
    proc = run(mempath_bin, "memcpy", *args, "--output", str(tmp_path / "x.h5"), check_rc=None)
    assert hint in one_line_error(proc)


# --- GPU<->GPU (--direction d2d, d2d-bidir) ---------------------------------------------

DUAL = str(FIXTURES / "gh200_dual")
def d2d_plan(binary: Path, fixture: str, *args: str) -> list[dict[str, str]]:
    """The planned d2d cases of `--from fixture`, with src (gpu), dst (dst_gpu) and stage
    (host_numa) named."""
    return [{**r, "src": r["gpu"], "dst": r["dst_gpu"], "stage": r["host_numa"]}
            for r in memcpy_plan(binary, fixture, "--direction", *args)]


def test_d2d_plan_quad_gh200_every_ordered_pair_every_engine(mempath_cpu_bin: Path) -> None:
    rows = d2d_plan(mempath_cpu_bin, QUAD, "d2d", "--size", "64MiB")
    assert len(rows) == 12 * 3
    assert {(r["src"], r["dst"]) for r in rows} == {(str(g), str(h)) for g in range(4) for h in range(4) if g != h}
    assert all(r["status"] == "planned" for r in rows)
    assert all(r["via"] == "nvlink" for r in rows if r["engine"] in ("ce", "sm"))
    staged = [r for r in rows if r["engine"] == "staged"]
    assert staged and all(r["stage"] == r["src"] and r["chunk"] == str(16 << 20) for r in staged)


def test_d2d_plan_dual_gh200_has_no_peer_access_but_stages(mempath_cpu_bin: Path) -> None:
    rows = d2d_plan(mempath_cpu_bin, DUAL, "d2d,d2d-bidir", "--chunk", "8MiB")
    assert len(rows) == 2 * 3 + 3
    for r in rows:
        if r["engine"] == "staged":
            assert r["status"] == "planned" and r["chunk"] == str(8 << 20)
        else:
            assert (r["status"], r["reason"]) == ("skipped", f"no peer access from GPU {r['src']} to GPU {r['dst']}")
    bidir = [r for r in rows if r["direction"] == "d2d-bidir"]
    assert [(r["src"], r["dst"]) for r in bidir] == [("0", "1")] * 3


def test_d2d_plan_one_gpu_is_skipped_with_the_reason(mempath_cpu_bin: Path) -> None:
    rows = d2d_plan(mempath_cpu_bin, H100, "d2d")
    assert len(rows) == 3
    assert all(r["status"] == "skipped" and "this node has one GPU (gpu0)" in r["reason"] for r in rows)


def test_d2d_plan_staging_node_and_gpu_list(mempath_cpu_bin: Path) -> None:
    rows = d2d_plan(mempath_cpu_bin, str(FIXTURES / "x86_2s_4gpu"), "d2d", "--engine", "staged", "--gpu", "1,3", "--mem", "numa1")
    assert [(r["src"], r["dst"], r["stage"]) for r in rows] == [("1", "3", "1"), ("3", "1", "1")]


D2D_BAD_INPUT = [
    (["--from", DUAL, "--direction", "d2d", "--gpu", "0"], "names only gpu0"),
    (["--from", DUAL, "--direction", "d2d,h2d"], "run them separately"),
    (["--from", DUAL, "--direction", "d2d", "--alloc", "pinned"], "--alloc does not apply"),
    (["--from", DUAL, "--direction", "d2d", "--all-gpus"], "--all-gpus"),
    (["--from", DUAL, "--direction", "d2d", "--latency"], "--latency"),
    (["--from", DUAL, "--direction", "d2d", "--engine", "ce", "--mem", "numa0"], "staging"),
    (["--from", DUAL, "--direction", "d2d", "--engine", "dma"], "valid: ce, sm, staged"),
    (["--from", DUAL, "--chunk", "4MiB"], "add --direction d2d"),
    (["--from", DUAL, "--engine", "staged"], "add --direction d2d"),
]


@pytest.mark.parametrize("args,hint", D2D_BAD_INPUT)
def test_d2d_bad_input_is_one_line_and_exit_2(mempath_cpu_bin: Path, args: list[str], hint: str) -> None:
    assert hint in one_line_error(run(mempath_cpu_bin, "memcpy", *args, check_rc=None))


def gpu_count(binary: Path) -> int:
    return sum(1 for p in topology(binary)["processors"] if p["kind"] == "gpu")


def need_two_gpus(binary: Path) -> None:
    if gpu_count(binary) < 2:
        pytest.skip("GPU<->GPU copies need at least 2 GPUs; this node has fewer")


@pytest.mark.gpu
def test_d2d_on_one_gpu_is_skipped(mempath_bin: Path, tmp_path: Path) -> None:
    if gpu_count(mempath_bin) != 1:
        pytest.skip("this node has more than one GPU")
    out = tmp_path / "one.h5"
    proc = run(mempath_bin, "memcpy", "--direction", "d2d", *GPU_SMALL, "--output", str(out))
    lines = summaries(proc.stdout)
    assert len(lines) == 3 and all(l["status"] == "skipped" and "one GPU" in l["reason"] for l in lines)
    assert set(table(out, "cases")["status"]) == {"skipped"}


@pytest.mark.gpu
def test_d2d_every_engine_writes_summary_and_tables(mempath_bin: Path, tmp_path: Path) -> None:
    need_two_gpus(mempath_bin)
    gpus = {p["gpu"]: p for p in topology(mempath_bin)["processors"] if p["kind"] == "gpu"}
    out = tmp_path / "d2d.h5"
    proc = run(mempath_bin, "memcpy", "--direction", "d2d", "--gpu", "0,1", *GPU_SMALL, "--output", str(out))
    lines = summaries(proc.stdout)
    assert len(lines) == 2 * 3  # 0->1, 1->0; ce, sm, staged
    for line in lines:
        src, dst = int(line["gpu"]), int(line["dst_gpu"])
        assert {src, dst} == {0, 1} and line["direction"] == "d2d"
        if line["engine"] != "staged" and dst not in gpus[src]["peers"]:
            assert line["status"] == "skipped"
            assert line["reason"] == f"no peer access from GPU {src} to GPU {dst}"
            continue
        assert line["status"] == "ok", line
        assert float(line["median_GBps"]) > 1 and line["timing"] == "events"
        if line["engine"] == "staged":
            assert line["chunk"] == str(16 << 20) and line["alloc"] == "pinned"
            assert line["host_numa"] == str(gpus[src]["host_numa"]) and line["placement"].startswith("numa")
        else:
            assert line["alloc"] == "device" and line["via"] in ("nvlink", "peer")
    s, c = table(out, "samples"), table(out, "cases")
    assert set(s["part"]) == {"d2d"} and set(s["direction"]) == {"d2d"}
    np.testing.assert_allclose(s["bandwidth_GBps"], s["bytes"] / s["time_s"] / 1e9)
    ok = c["status"] == "ok"
    assert (c["verified"][ok] == 1).all()
    assert ((c["dst_gpu"] == 1) == (c["gpu"] == 0)).all()
    staged = c["engine"] == "staged"
    assert (c["chunk_bytes"][staged] == 16 << 20).all() and (c["chunk_bytes"][~staged] == -1).all()
    assert (ok | ~staged).all()  # staged always runs with two GPUs
    for i in np.flatnonzero(ok):
        mine = s["case_id"] == c["case_id"][i]
        assert mine.sum() == 5 and (s["dst_gpu"][mine] == c["dst_gpu"][i]).all()
        assert math.isclose(c["median_GBps"][i], float(np.median(s["bandwidth_GBps"][mine])), rel_tol=1e-9)


@pytest.mark.gpu
@pytest.mark.parametrize("engine", ["ce", "sm", "staged"])
def test_d2d_bidirectional_reports_each_way_and_the_sum(mempath_bin: Path, tmp_path: Path, engine: str) -> None:
    need_two_gpus(mempath_bin)
    out = tmp_path / "bd.h5"
    proc = run(mempath_bin, "memcpy", "--direction", "d2d-bidir", "--gpu", "0,1", "--engine", engine,
               "--chunk", "4MiB", *GPU_SMALL, "--output", str(out))
    (line,) = summaries(proc.stdout)
    if line["status"] == "skipped":
        assert engine != "staged" and line["reason"].startswith("no peer access from GPU")
        return
    assert line["status"] == "ok", line
    assert float(line["fwd_median_GBps"]) > 1 and float(line["rev_median_GBps"]) > 1
    s, c = table(out, "samples"), table(out, "cases")
    assert sorted(set(s["part"])) == ["d2d", "total"]
    for rep in range(5):
        rows = [(p, g, d, b) for p, g, d, b, r in zip(s["part"], s["gpu"], s["dst_gpu"], s["bandwidth_GBps"], s["rep"])
                if r == rep]
        ways = {(g, d): b for p, g, d, b in rows if p == "d2d"}
        assert set(ways) == {(0, 1), (1, 0)}
        (total,) = [b for p, _, _, b in rows if p == "total"]
        assert math.isclose(total, ways[(0, 1)] + ways[(1, 0)], rel_tol=1e-9)
    assert c["verified"][0] == 1 and c["bytes"][0] == 2 * (64 << 20)
    assert c["chunk_bytes"][0] == (4 << 20 if engine == "staged" else -1)


@pytest.mark.gpu
def test_direction_table_follows_the_summary_lines(mempath_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.h5"
    proc = run(mempath_bin, "memcpy", "--gpu", "0", *GPU_SMALL, "--output", str(out))
    lines = proc.stdout.splitlines()
    last = max(i for i, line in enumerate(lines) if line.startswith("MEMPATH "))
    tail = [line for line in lines[last + 1:] if line.strip()]
    assert tail and tail[0].startswith("memcpy: median GB/s"), proc.stdout
    header = tail[1].split()
    assert {"h2d", "d2h", "bidir"} <= set(header), tail
    (row,) = [line.split() for line in tail[2:] if line.split()[0] == "gpu0"]
    cells = dict(zip(header[1:], row[1:]))
    ce = {s["direction"]: float(s["median_GBps"]) for s in summaries(proc.stdout)
          if s["engine"] == "ce" and s["status"] == "ok"}
    for direction in ("h2d", "d2h"):  # the table shows the very medians of the summary lines
        assert float(cells[direction]) == pytest.approx(ce[direction], rel=0.01), (cells, ce)

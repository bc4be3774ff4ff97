"""`mempath chase` and `mempath pingpong` end to end. CPU cases run on any machine with
two cores; GPU cases are marked `gpu`."""
from __future__ import annotations

import hashlib
from pathlib import Path

import h5py
import numpy as np
import pytest

from conftest import run, summaries


def chase(binary: Path, out: Path, *args: str, check_rc: int = 0) -> list[dict[str, str]]:
    proc = run(binary, "chase", "--output", str(out), *args, check_rc=check_rc)
    return summaries(proc.stdout, "chase")


def test_cpu_chase_sweep_records_every_size_and_the_caches(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "c.h5"
    lines = chase(mempath_cpu_bin, out, "--min-size", "4KiB", "--max-size", "1MiB", "--accesses", "200000")
    assert [int(l["size"]) for l in lines] == [4096 << k for k in range(9)]
    assert all(l["status"] == "ok" and l["pu"] == "cpu0" and l["cpu"] == "0" for l in lines), lines
    with h5py.File(out) as f:
        cases = f["chase/cases"]
        assert (cases["verified"][()] == 1).all()
        assert (cases["median_ns"][()] > 0).all()
        assert np.isnan(cases["median_cycles"][()]).all()  # CPU: no cycle counts
        assert len(f["chase/samples/rep"]) == 9 * 3
        levels = set(f["chase/caches/level"].asstr()[()])
        assert "L1d" in levels and set(f["chase/caches/source"].asstr()[()]) == {"sysfs"}


def test_random_chase_defeats_the_prefetcher(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    """At a size far beyond the caches a sequential chain is prefetched and a random one
    is not: the random chase must be several times slower."""
    lines = chase(mempath_cpu_bin, tmp_path / "p.h5", "--size", "512MiB", "--pattern", "random,sequential",
                  "--accesses", "1000000")
    by = {l["pattern"]: float(l["median_ns"]) for l in lines}
    assert by["random"] > 3 * by["sequential"], by


def test_locality_and_huge_pages_are_recorded(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "h.h5"
    lines = chase(mempath_cpu_bin, out, "--size", "64MiB", "--locality", "256KiB", "--huge-pages",
                  "--alloc", "system")
    assert lines[0]["status"] == "ok" and lines[0]["locality"] == str(256 << 10) and lines[0]["huge"] == "1"
    with h5py.File(out) as f:
        fraction = f["chase/cases/huge_page_fraction"][0]
        assert 0.0 <= fraction <= 1.0


def test_huge_pages_on_pinned_memory_are_skipped_with_the_reason(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    lines = chase(mempath_cpu_bin, tmp_path / "x.h5", "--size", "1MiB", "--huge-pages", "--alloc", "pinned")
    assert lines[0]["status"] == "skipped" and lines[0]["reason"], lines


def test_too_short_a_repetition_fails_the_timing_guard(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    lines = chase(mempath_cpu_bin, tmp_path / "g.h5", "--size", "4KiB", "--accesses", "64", check_rc=1)
    assert lines[0]["status"] == "failed" and "us" in lines[0]["reason"], lines


@pytest.mark.parametrize("args,hint", [
    (["--cpu", "99999"], "is not a CPU of this node"),
    (["--size", "32"], "smaller than one line"),
    (["--size", "64TiB"], "larger than"),
    (["--size", "4097"], "not a multiple of --line"),
    (["--pu", "cpus"], "one thread"),
    (["--pu", "gpu0"], "no CUDA support"),
    (["--pattern", "zigzag"], "valid: random, sequential"),
    (["--line", "12"], "multiple of 8"),
])
def test_chase_bad_input_is_one_line_and_keeps_earlier_results(mempath_cpu_bin: Path, tmp_path: Path,
                                                               args: list[str], hint: str) -> None:
    out = tmp_path / "keep.h5"
    chase(mempath_cpu_bin, out, "--size", "64KiB")
    before = hashlib.sha256(out.read_bytes()).hexdigest()
    proc = run(mempath_cpu_bin, "chase", "--output", str(out), *args, check_rc=2)
    assert proc.stderr.count("\n") == 1 and hint in proc.stderr, proc.stderr
    assert hashlib.sha256(out.read_bytes()).hexdigest() == before


def test_cpu_pingpong_between_two_cores(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "pp.h5"
    proc = run(mempath_cpu_bin, "pingpong", "--round-trips", "20000", "--warmup", "100", "--output", str(out))
    lines = summaries(proc.stdout, "pingpong")
    ok = [l for l in lines if l["status"] == "ok"]
    assert ok and all(l["a"] == "cpu0" and l["a_cpu"] != l["b_cpu"] for l in ok), lines
    # Two cores of one node, the flag in that node: nothing leaves the socket.
    assert all(l["via"] == "local" for l in ok if l["mem"] == "numa0"), lines
    skipped = [l for l in lines if l["status"] == "skipped"]
    assert all(l["reason"] for l in skipped)  # pinned/managed without a GPU: said why
    with h5py.File(out) as f:
        cases = f["pingpong/cases"]
        first = int(np.flatnonzero(cases["status"][()] == b"ok")[0])
        assert cases["verified"][first] == 1 and cases["round_trips"][first] == 20000
        assert cases["via"][first].decode() == lines[first]["via"]
        rtt = f["pingpong/samples/rtt_ns"][()][f["pingpong/samples/case_id"][()] == first]
        assert len(rtt) == 20000 and (rtt >= 0).all()
        # The mean of the stored round trips is the total time over their count.
        assert cases["mean_ns"][first] == pytest.approx(rtt.mean())
        assert cases["p05_ns"][first] <= cases["median_ns"][first] <= cases["p99_ns"][first] <= cases["max_ns"][first]


@pytest.mark.parametrize("args,hint", [(["--pu", "cpu7"], "valid: cpu0"), (["--pu", "gpu0"], "no CUDA support"),
                                       (["--mem", "numa5"], "unknown memory"), (["--alloc", "glue"], "invalid --alloc"),
                                       (["--round-trips", "0"], "round-trips")])
def test_pingpong_bad_input(mempath_cpu_bin: Path, args: list[str], hint: str) -> None:
    proc = run(mempath_cpu_bin, "pingpong", *args, check_rc=2)
    assert proc.stderr.count("\n") == 1 and hint in proc.stderr, proc.stderr


# --- GPU (run on the device) ---------------------------------------------------------

@pytest.mark.gpu
def test_gpu_chase_sees_l1_l2_and_memory(mempath_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "g.h5"
    lines = chase(mempath_bin, out, "--pu", "gpu0", "--size", "64KiB,16MiB,1GiB")
    ns = [float(l["median_ns"]) for l in lines]
    assert all(l["status"] == "ok" for l in lines), lines
    assert ns[0] < ns[1] < ns[2], ns  # L1 < L2 < HBM
    assert all(float(l["median_cycles"]) > 0 for l in lines)
    with h5py.File(out) as f:
        assert (f["chase/cases/verified"][()] == 1).all()
        assert {"L1", "L2"} <= set(f["chase/caches/level"].asstr()[()])


@pytest.mark.gpu
def test_gpu_chase_of_host_memory_is_slower_than_of_device_memory(mempath_bin: Path, tmp_path: Path) -> None:
    dev = chase(mempath_bin, tmp_path / "d.h5", "--pu", "gpu0", "--size", "256MiB")[0]
    host = chase(mempath_bin, tmp_path / "h.h5", "--pu", "gpu0", "--mem", "numa0", "--alloc", "pinned",
                 "--size", "256MiB", "--accesses", "65536")
    assert host[0]["status"] == "ok", host
    assert float(host[0]["median_ns"]) > float(dev["median_ns"])


@pytest.mark.gpu
def test_gpu_chase_at_1gib_pays_memory_latency_in_either_order(mempath_bin: Path, tmp_path: Path) -> None:
    """A GPU has no prefetcher for dependent loads and fetches 32-byte sectors: walked in
    address order with 64-byte lines, each load still goes to memory. Both orders must
    cost well over twice an L2 hit, or the chase was served by a cache."""
    lines = chase(mempath_bin, tmp_path / "s.h5", "--pu", "gpu0", "--size", "4MiB,1GiB",
                  "--pattern", "random,sequential")
    by = {(l["pattern"], l["size"]): float(l["median_ns"]) for l in lines}
    l2 = by[("random", str(4 << 20))]
    assert by[("random", str(1 << 30))] > 2 * l2 and by[("sequential", str(1 << 30))] > 2 * l2, by


@pytest.mark.gpu
def test_gpu_chase_all_reaches_every_memory_it_may(mempath_bin: Path, tmp_path: Path) -> None:
    """--all from gpu0 at one size: its own memory, host memory through the default
    allocator, and a peer GPU's memory (peer access enabled for the chase)."""
    lines = chase(mempath_bin, tmp_path / "a.h5", "--all", "--pu", "gpu0", "--size", "64MiB", "--accesses", "65536")
    assert all(l["status"] in ("ok", "skipped") for l in lines), lines
    assert {l["mem"] for l in lines if l["status"] == "ok"} >= {"gpu0", "numa0"}


@pytest.mark.gpu
def test_gpu_chase_too_short_fails_the_timer_guard(mempath_bin: Path, tmp_path: Path) -> None:
    lines = chase(mempath_bin, tmp_path / "t.h5", "--pu", "gpu0", "--size", "64KiB", "--accesses", "16", check_rc=1)
    assert lines[0]["status"] == "failed" and "globaltimer" in lines[0]["reason"]


@pytest.mark.gpu
def test_cpu_gpu_pingpong_on_pinned_memory(mempath_bin: Path, tmp_path: Path) -> None:
    out = tmp_path / "p.h5"
    proc = run(mempath_bin, "pingpong", "--pu", "cpu0,gpu0", "--alloc", "pinned,device", "--round-trips", "5000",
               "--output", str(out))
    lines = {(l["a"], l["b"], l["mem"], l["alloc"]): l for l in summaries(proc.stdout, "pingpong")}
    cg = lines[("cpu0", "gpu0", "numa0", "pinned")]
    assert cg["status"] == "ok", cg
    gg = lines[("gpu0", "gpu0", "gpu0", "device")]
    assert gg["status"] == "ok", gg
    # Over PCIe a round trip costs far more than between two SMs through L2.
    assert float(cg["median_ns"]) > float(gg["median_ns"])
    assert lines[("cpu0", "cpu0", "gpu0", "device")]["status"] == "skipped"
    with h5py.File(out) as f:
        ok = f["pingpong/cases/status"][()] == b"ok"
        assert (f["pingpong/cases/verified"][()][ok] == 1).all()

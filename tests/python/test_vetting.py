"""Fleet vetting (issue 11): slurm/vet_node.sh runs the short preset into OUTDIR/<host>/,
keeps going past a failed command and says so in its exit code; the ReFrame check
`MempathVetting` (reframe_checks/vetting.py) is selected by `--tag vetting` and a real
local run of it passes and keeps the node's HDF5 files. Tiny sizes: functional only.
"""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VET_NODE = REPO / 'slurm' / 'vet_node.sh'
CHECKS = REPO / 'reframe_checks'
CONFIGS = REPO / 'site_configs'

from test_reframe import listed, mempath_binary, reframe  # noqa: E402

#: The preset at sizes a 2-core test machine runs in seconds.
TINY = {'VET_SIZE': '8MiB', 'VET_IN_CACHE': '1', 'VET_CHASE_SIZE': '1MiB', 'VET_REPS': '2',
        'VET_ROUND_TRIPS': '200', 'VET_TIMEOUT': '60'}
#: `-S` settings of the check that give the same tiny preset.
TINY_VARS = ['-S', 'MempathVetting.size=8MiB', '-S', 'MempathVetting.in_cache=true',
             '-S', 'MempathVetting.chase_size=1MiB', '-S', 'MempathVetting.reps=2',
             '-S', 'MempathVetting.round_trips=200', '-S', 'MempathVetting.case_timeout=60']
HOST = socket.gethostname().split('.')[0]


def binary() -> Path:
    found = mempath_binary()
    if found is None:
        pytest.skip('no mempath binary built (tests/run_tests.sh builds it)')
    return found


def vet(outdir: Path, mempath: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **TINY, 'MEMPATH': str(mempath), 'VET_PYTHON': sys.executable, **extra}
    return subprocess.run([str(VET_NODE), str(outdir), *args], env=env, capture_output=True,
                          text=True, timeout=120)


def test_vet_node_writes_every_command_into_the_host_folder(tmp_path: Path):
    out = vet(tmp_path, binary())
    assert out.returncode == 0, out.stdout + out.stderr
    files = sorted(str(p.relative_to(tmp_path / HOST)) for p in (tmp_path / HOST).rglob('*.h5'))
    has_gpu = 'memcpy left out' not in out.stdout
    gpu_files = ['memcpy.h5', 'chase_gpu.h5', 'copy/gpu0.h5'] * has_gpu
    assert files == sorted(['bw.h5', 'chase.h5', 'pingpong.h5', 'copy/cpu0.h5', *gpu_files])
    import h5py

    for name in files:
        with h5py.File(tmp_path / HOST / name) as f:
            assert f.attrs['host'] == HOST
            assert 'gpu_uuids' in f.attrs   # node identity for the fleet report
    assert not re.search(r'^MEMPATH \w+ .*status=failed', out.stdout, re.MULTILINE)
    # Its fleet rows in one file, which the fleet analysis then reads instead of the files.
    assert f'{HOST}: fleet summary in ' in out.stdout
    summary = json.loads((tmp_path / HOST / 'fleet-summary.json').read_text())
    assert sorted(f[0] for f in summary['files']) == files


def test_vet_node_without_the_analysis_writes_no_summary_and_still_succeeds(tmp_path: Path):
    out = vet(tmp_path, binary(), VET_PYTHON='false')
    assert out.returncode == 0, out.stdout + out.stderr
    assert f'{HOST}: no fleet summary (' in out.stdout
    assert 'the fleet analysis reads the files' in out.stdout
    assert not (tmp_path / HOST / 'fleet-summary.json').exists()


def planned(fixture: str) -> dict[str, int]:
    """The preset's planned cases per file on a topology snapshot (VET_PLAN)."""
    snapshot = REPO / 'tests' / 'fixtures' / fixture
    out = subprocess.run([str(VET_NODE)], capture_output=True, text=True, timeout=60, env={
        **os.environ, 'MEMPATH': str(binary()), 'VET_PLAN': str(snapshot)})
    assert out.returncode == 0 and not out.stderr, out.stderr
    return {m[1]: int(m[2]) for m in re.finditer(r'^vet_node\.sh: plan (\S+)\.h5: (\d+) cases$',
                                                  out.stdout, re.MULTILINE)}


#: The quad GH200 preset, per file group: what docs/results/2026-11-24-vetting.md
#: extrapolates to ~2.4 min per node, at most ~4.1 (goal: < 5 min). A larger plan
#: must update that estimate.
QUAD_GH200_BUDGET = {'bw': 112, 'copy': 80, 'memcpy': 8, 'chase': 36, 'pingpong': 9}


def test_quad_gh200_preset_stays_within_its_time_budget():
    counts = planned('gh200_quad')
    group = {'bw': 'bw', 'memcpy': 'memcpy', 'chase': 'chase', 'chase_gpu': 'chase',
             'pingpong': 'pingpong'}
    totals = dict.fromkeys(QUAD_GH200_BUDGET, 0)
    for name, cases in counts.items():
        totals['copy' if name.startswith('copy/') else group[name]] += cases
    assert totals == QUAD_GH200_BUDGET, counts
    # Every processor copies from its own memory (8 files), and every processor x memory
    # path is read: 4 sockets and 4 GPUs x 8 NUMA nodes, GPUs x 4 device memories, pinned.
    assert sorted(n for n in counts if n.startswith('copy/')) == \
        [f'copy/{pu}{i}' for pu in ('cpu', 'gpu') for i in range(4)]


def test_preset_reads_the_pcie_path_of_a_gpu_without_ats():
    """Pinned host memory is how an x86 GPU reads the host (no pageable access): without
    it the preset would have no GPU<->host read on such nodes."""
    assert planned('x86_h100') == {'bw': 4, 'copy/cpu0': 1, 'copy/gpu0': 2, 'memcpy': 2,
                                   'chase': 1, 'chase_gpu': 2, 'pingpong': 7}


def test_plan_of_a_bad_snapshot_is_one_line_exit_2(tmp_path: Path):
    out = subprocess.run([str(VET_NODE)], capture_output=True, text=True, timeout=60, env={
        **os.environ, 'MEMPATH': str(binary()), 'VET_PLAN': str(tmp_path / 'none')})
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_vet_node_runs_every_command_past_a_failure(tmp_path: Path):
    """A failed command must not hide the others (issue 11: one night per fleet): the
    stand-in fails `chase` with 1, the rest still run and the script exits 1."""
    real = binary()
    stub = tmp_path / 'mempath'
    stub.write_text(f'#!/bin/sh\n[ "$1" = chase ] && exit 1\nexec {real} "$@"\n')
    stub.chmod(0o755)
    out = vet(tmp_path / 'out', stub)
    assert out.returncode == 1, out.stdout + out.stderr
    assert 'mempath chase exited with 1' in out.stderr
    assert (tmp_path / 'out' / HOST / 'pingpong.h5').is_file()


def test_vet_node_bad_input_is_one_line_and_exit_2(tmp_path: Path):
    out = vet(tmp_path, binary(), 'extra')
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    missing = vet(tmp_path, tmp_path / 'no-such-mempath')
    assert missing.returncode == 2 and 'MEMPATH' in missing.stderr, missing.stderr


def test_vetting_tag_selects_the_vetting_check():
    assert listed('generic.py', '--tag', 'vetting') == ['MempathVetting']


COPY_CMAKE = """cmake_minimum_required(VERSION 3.20)
project(prebuilt_mempath NONE)
file(COPY {binary} DESTINATION ${{CMAKE_BINARY_DIR}})
"""


def prebuilt_sources(tmp_path: Path, mempath: Path) -> Path:
    """A source folder whose "build" copies an already built mempath: the check runs the
    real binary without compiling it again in the test."""
    src = tmp_path / 'prebuilt_src'
    src.mkdir()
    (src / 'CMakeLists.txt').write_text(COPY_CMAKE.format(binary=mempath))
    return src


def test_local_run_of_the_vetting_check(tmp_path: Path):
    src = prebuilt_sources(tmp_path, binary())
    report = tmp_path / 'report.json'
    out = reframe('-C', str(CONFIGS / 'generic.py'), '-c', str(CHECKS / 'vetting.py'), '-r',
                  '--tag', 'vetting', *TINY_VARS, '-S', f'MempathBuild.sourcesdir={src}',
                  '--prefix', str(tmp_path / 'rfm'), '--report-file', str(report), timeout=120)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    case = next(tc for tc in json.loads(report.read_text())['runs'][0]['testcases']
                if tc['name'] == 'MempathVetting')
    assert case['result'] == 'pass', case['fail_reason']
    perf = {k.split(':')[-1]: v for k, v in case['perfvalues'].items()}
    assert perf['host_read_min'][0] > 0 and perf['host_read_min'][4] == 'GB/s', perf
    kept = list((tmp_path / 'rfm' / 'output').glob(f'*/*/*/MempathVetting/vetting/{HOST}/bw.h5'))
    assert len(kept) == 1, text

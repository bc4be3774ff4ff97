"""The checks under a centre's own ReFrame: a virtual environment holding ReFrame (the
version requirements.txt pins) and nothing else, so no h5py, numpy or analysis package.
Sanity and performance must come from the job's output alone (issue 19).

Needs a package index to make that environment; CI has one (.ci/run fails if this skips).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

CHECKS, CONFIGS = REPO / 'reframe_checks', REPO / 'site_configs'


def pinned_reframe() -> str:
    text = (REPO / 'requirements.txt').read_text()
    found = re.search(r'^reframe-hpc==\S+$', text, re.M)
    assert found, 'requirements.txt pins no reframe-hpc'
    return found.group(0)


@pytest.fixture(scope='module')
def lone_reframe(tmp_path_factory) -> Path:
    """bin/reframe of a fresh venv with ReFrame alone."""
    venv = tmp_path_factory.mktemp('reframe_alone') / 'venv'
    subprocess.run([sys.executable, '-m', 'venv', str(venv)], check=True, timeout=300)
    pip = subprocess.run([str(venv / 'bin' / 'python'), '-m', 'pip', 'install', '-q',
                          pinned_reframe()], capture_output=True, text=True, timeout=900)
    if pip.returncode != 0:
        pytest.skip(f'cannot install {pinned_reframe()} (no package index?): '
                    f'{pip.stderr.strip().splitlines()[-1:]}')
    for module in ('h5py', 'numpy', 'analysis'):
        probe = subprocess.run([str(venv / 'bin' / 'python'), '-c', f'import {module}'],
                               capture_output=True, cwd='/')
        assert probe.returncode != 0, f'{module} is importable beside the lone ReFrame'
    return venv / 'bin' / 'reframe'


def test_acceptance_checks_pass_under_a_lone_reframe(lone_reframe: Path, mempath_cpu_bin: Path,
                                                      tmp_path: Path):
    """Every CPU acceptance check, on this node, with the binary that was built: bandwidth,
    chase and STREAM (the last two read `verified` in sanity, from HDF5 until issue 19)."""
    report = tmp_path / 'report.json'
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(('RFM_', 'MEMPATH_', 'PYTHON', 'VIRTUAL_ENV'))}
    env['PATH'] = f'{lone_reframe.parent}{os.pathsep}/usr/bin{os.pathsep}/bin'
    out = subprocess.run(
        [str(lone_reframe), '-C', str(CONFIGS / 'generic.py'), '-c', str(CHECKS), '-r',
         '--tag', 'acceptance',
         '-S', f'MempathBuild.mempath_bin={mempath_cpu_bin}',
         '-S', 'MempathBandwidth.size=8MiB', '-S', 'MempathBandwidth.in_cache=true',
         '-S', 'MempathBandwidth.reps=3', '-S', 'MempathChase.size=1MiB',
         '-S', 'MempathChase.reps=3', '-S', 'MempathStream.size=8MiB',
         '-S', 'MempathStream.extra_options=--in-cache',
         '--prefix', str(tmp_path / 'rfm'), '--report-file', str(report)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200)
    text = out.stdout[-6000:] + out.stderr[-3000:]
    assert 'h5py' not in text, text
    cases = {tc['name']: tc for tc in json.loads(report.read_text())['runs'][0]['testcases']}
    checks = {n: c for n, c in cases.items() if not n.startswith('MempathBuild')}
    assert {n.split(' ')[0] for n in checks} >= {'MempathBandwidth', 'MempathChase',
                                                 'MempathStream'}, sorted(cases)
    failed = {n: c['fail_reason'] for n, c in checks.items() if c['result'] != 'pass'}
    assert not failed, f'{failed}\n{text}'
    assert out.returncode == 0, text
    for name, case in checks.items():
        assert case['perfvalues'], name

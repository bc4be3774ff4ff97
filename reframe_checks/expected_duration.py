#!/usr/bin/env python3
"""How long a selection of the suite is expected to take on a node, before it runs.

    python3 reframe_checks/expected_duration.py --tag full                  # this node
    python3 reframe_checks/expected_duration.py --tag full --from tests/fixtures/gh200_quad
    python3 reframe_checks/expected_duration.py --tag full -- -S MempathBandwidth.quick=true

ReFrame's `--dry-run` writes every selected check's job script without running it; each
script's `mempath` command is then run with `--from SNAPSHOT` (plan only: nothing is
measured), whose `EXPECT` line carries the binary's modelled duration of the check
(docs/methodology.md, "Expected duration"). The sum is a model, within 1.5x per check on
the H100 and H200 nodes it was held against (a GH200's from documented peaks); a run's
`ELAPSED` lines say how far off it was. Commands that are not `mempath` (the
scale-out checks' `mempath-mpi`, the inventory, nccl-tests) have no plan to ask and are
listed as not modelled, with why.

Without `--from`, the snapshot is this node's (`mempath topo --save`) and the checks those
`--config` (default: site_configs/generic.py, as run_suite.sh) selects here. With `--from`,
unless `--config` is given, a one-partition configuration is written whose features are
those of the snapshot's node (`gpu nvgpu` when it has GPUs, `mpi` with `--mpi`), so that
the selection is what that node would run. Arguments after `--` go to ReFrame (`-S`...).
Standard library only. Exit 0 with the estimate; 1 with one line saying why there is none.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: The dry run's line of a check: `[ DRY ] NAME %p=v /HASH @system:partition+environ`.
DRY_LINE = re.compile(r'DRY\s.*?\]\s+(?P<name>.+?)\s+/(?P<hash>[0-9a-f]{8})\s+@')
#: Programs of job scripts that have no plan to ask, and why.
NOT_MODELLED = {
    'mempath-mpi': 'mempath-mpi has no --from plan (multi-node; its time depends on the network)',
}
#: Folders of the job scripts of build fixtures: they compile, they measure nothing.
FIXTURE_PREFIXES = ('MempathBuild_', 'NcclTestsBuild_')

PLANNING_CONFIG = '''site_configuration = {{
    'systems': [{{
        'name': 'planned', 'descr': 'the node of a topology snapshot (expected_duration.py)',
        'hostnames': ['.*'], 'modules_system': 'nomod',
        'partitions': [{{'name': 'node', 'scheduler': 'local', 'launcher': 'local',
                         'environs': ['builtin'], 'features': {features!r},
                         'devices': {devices!r}, 'max_jobs': 1}}],
    }}],
    'environments': [{{'name': 'builtin', 'target_systems': ['planned'],
                       'features': ['compiler', 'cuda', 'mpi'],
                       'cc': 'cc', 'cxx': 'c++', 'ftn': ''}}],
}}
'''


class NoEstimate(Exception):
    """The estimate cannot be made: one line says why."""


@dataclass
class Check:
    name: str
    command: list[str]            # the job script's command line
    expected_s: float | None = None
    detail: str = ''              # `bench: planned of cases`, or why not modelled


def default_mempath() -> str:
    for candidate in (os.environ.get('MEMPATH_BIN'), REPO / 'build' / 'mempath', shutil.which('mempath')):
        if candidate and Path(candidate).is_file():
            return str(candidate)
    raise NoEstimate('no mempath binary (build it, or pass --mempath / set MEMPATH_BIN)')


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)


def snapshot_gpus(mempath: str, snapshot: str) -> int:
    out = run([mempath, 'topo', '--json', '--from', snapshot])
    if out.returncode != 0:
        raise NoEstimate(f'mempath topo --from {snapshot}: {last_line(out.stderr)}')
    return sum(p.get('kind') == 'gpu' for p in json.loads(out.stdout).get('processors', []))


def planning_config(folder: Path, gpus: int, mpi: bool) -> Path:
    features = ['remote'] + (['gpu', 'nvgpu'] if gpus else []) + (['mpi'] if mpi else [])
    devices = [{'type': 'gpu', 'num_devices': gpus}] if gpus else []
    path = folder / 'planning_config.py'
    path.write_text(PLANNING_CONFIG.format(features=features, devices=devices))
    return path


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else 'no output'


def dry_run(reframe: list[str], config: str, tag: str, prefix: Path, extra: list[str]) -> list[Check]:
    """The selected checks and the command line of each one's job script."""
    out = run([*reframe, '-C', config, '-c', str(REPO / 'reframe_checks'), '--tag', tag,
               '--dry-run', '--prefix', str(prefix), *extra], cwd=REPO)
    names = {m['hash']: m['name'] for m in map(DRY_LINE.search, out.stdout.splitlines()) if m}
    if out.returncode != 0 or not names:
        raise NoEstimate(f'reframe --dry-run selected no check ({last_line(out.stdout + out.stderr)})')
    checks = []
    for script in sorted(prefix.glob('stage/**/rfm_job.sh')):
        folder = script.parent.name
        if folder.startswith(FIXTURE_PREFIXES):
            continue
        lines = [line for line in script.read_text().splitlines()
                 if line.strip() and not line.startswith('#')]
        name = names.get(folder.rsplit('_', 1)[-1], folder)
        checks.append(Check(name, shlex.split(lines[-1]) if lines else []))
    return checks


def program_index(command: list[str]) -> int:
    """Where the measured program stands in a job's command (after any launcher); not a
    path handed to another program as an option's value (`inventory.py --mempath PATH`)."""
    for i, word in enumerate(command):
        given_to_option = i > 0 and command[i - 1].startswith('--') and '=' not in command[i - 1]
        if Path(word).name in ('mempath', *NOT_MODELLED) and not given_to_option:
            return i
    return -1


def plan_command(args: list[str]) -> list[str]:
    """A check's mempath arguments as a plan: no result file, the snapshot's node."""
    kept, skip = [], False
    for word in args:
        if skip:
            skip = False
        elif word == '--output':
            skip = True
        elif word != '--overwrite':
            kept.append(word)
    return kept


def expect_fields(stdout: str) -> dict[str, str] | None:
    for line in stdout.splitlines():
        if line.startswith('EXPECT '):
            return dict(word.split('=', 1) for word in line.split()[2:])
    return None


def estimate(check: Check, mempath: str, snapshot: str) -> None:
    at = program_index(check.command)
    if at < 0:
        program = Path(check.command[0]).name if check.command else 'nothing'
        check.detail = f'not modelled: runs {program}, not mempath'
        return
    program = Path(check.command[at]).name
    if program in NOT_MODELLED:
        check.detail = f'not modelled: {NOT_MODELLED[program]}'
        return
    args = plan_command(check.command[at + 1:])
    out = run([mempath, *args, '--from', snapshot])
    fields = expect_fields(out.stdout)
    if out.returncode != 0 or fields is None:
        check.detail = f'not estimated: {last_line(out.stderr or out.stdout)}'
        return
    check.expected_s = float(fields['expected_s'])
    check.detail = f'{args[0]}: {fields["planned"]} of {fields["cases"]} cases planned'


def human(seconds: float) -> str:
    if seconds < 60:
        return f'{seconds:.0f} s'
    minutes = round(seconds / 60)
    return f'{minutes} min' if minutes < 60 else f'{minutes // 60} h {minutes % 60:02d} min'


def report(checks: list[Check], tag: str, where: str) -> str:
    width = max(len(c.name) for c in checks)
    lines = [f'expected duration of --tag {tag} on {where} (modelled, not measured: within 1.5x on '
             f'the nodes it was held against; docs/methodology.md)']
    for c in sorted(checks, key=lambda c: c.name):
        time = human(c.expected_s) if c.expected_s is not None else '-'
        lines.append(f'  {c.name:<{width}}  {time:>10}  {c.detail}')
    modelled = [c.expected_s for c in checks if c.expected_s is not None]
    left = len(checks) - len(modelled)
    lines.append(f'total: {human(sum(modelled))} (expected_s={sum(modelled):.0f}) over {len(modelled)} '
                 f'checks' + (f'; {left} not modelled, not counted' if left else ''))
    return '\n'.join(lines)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--tag', default='full', help='ReFrame tag of the selection (default full)')
    parser.add_argument('--from', dest='snapshot', help='topology snapshot (mempath topo --save); '
                        'default: this node')
    parser.add_argument('--mempath', help='the mempath binary that plans (default: MEMPATH_BIN, '
                        'build/mempath, mempath on PATH)')
    parser.add_argument('--config', help='ReFrame site configuration (default: generic.py for this '
                        'node, the snapshot node\'s features with --from)')
    parser.add_argument('--mpi', action='store_true', help='with --from: the node has the mpi feature')
    parser.add_argument('--reframe', default='reframe', help='the ReFrame command (default: reframe)')
    parser.add_argument('reframe_args', nargs='*', help='after --: more ReFrame options (-S ...)')
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    opts = parse(argv)
    try:
        mempath = opts.mempath or default_mempath()
        reframe = shlex.split(opts.reframe)
        if not shutil.which(reframe[0]):
            raise NoEstimate(f'{reframe[0]} is not on PATH (pass --reframe)')
        with tempfile.TemporaryDirectory(prefix='mempath-duration-') as tmp:
            folder = Path(tmp)
            snapshot = opts.snapshot
            if snapshot is None:
                snapshot = str(folder / 'node')
                saved = run([mempath, 'topo', '--save', snapshot])
                if saved.returncode != 0:
                    raise NoEstimate(f'mempath topo --save: {last_line(saved.stderr)}')
            config = opts.config or (str(REPO / 'site_configs' / 'generic.py') if opts.snapshot is None
                                     else str(planning_config(folder, snapshot_gpus(mempath, snapshot), opts.mpi)))
            checks = dry_run(reframe, config, opts.tag, folder / 'rfm', opts.reframe_args)
            for check in checks:
                estimate(check, mempath, snapshot)
        print(report(checks, opts.tag, opts.snapshot or 'this node'))
        return 0
    except (NoEstimate, OSError, subprocess.SubprocessError, ValueError) as err:
        print(f'mempath: no duration estimate: {err}', file=sys.stderr)
        return 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))

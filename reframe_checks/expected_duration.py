#!/usr/bin/env python3
"""How long a selection of the suite is expected to take on a node, before it runs.

    python3 reframe_checks/expected_duration.py --tag full                  # this node
    python3 reframe_checks/expected_duration.py --tag full --from tests/fixtures/gh200_quad
    python3 reframe_checks/expected_duration.py --tag full -- -S MempathBandwidth.quick=true

ReFrame's `--dry-run` writes every selected check's job script without running it; each
script's command is then planned with `--from SNAPSHOT` (nothing is measured): `mempath`
(the LLM decode, `mempath llm`, among its commands) and `mempath-mpi` for the job's ranks
and nodes (`--plan-ranks`, `--plan-nodes`, read from the launcher's options or the script's
`#SBATCH` lines), whose `EXPECT` line carries the modelled duration of the check
(docs/methodology.md, "Expected duration"). The sum is a model, within 1.5x per check
on the H100 and H200 nodes it was held against (a GH200's from documented peaks); a run's
`ELAPSED` lines say how far off it was. Other commands (the inventory, nccl-tests) have no
plan to ask and are listed as not modelled, with why.

Without `--from`, the snapshot is this node's (`mempath topo --save`) and the checks those
`--config` (default: site_configs/generic.py, as run_suite.sh) selects here. With `--from`,
unless `--config` is given, a one-partition configuration is written whose features are
those of the snapshot's node (`gpu nvgpu` when it has GPUs, `mpi` with `--mpi`; its
launcher writes each job's tasks on the command line), so that the selection is what that
node would run; a multi-node check's other nodes are taken to be like it. Arguments after
`--` go to ReFrame (`-S`...).
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
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: The dry run's line of a check: `[ DRY ] NAME %p=v /HASH @system:partition+environ`.
DRY_LINE = re.compile(r'DRY\s.*?\]\s+(?P<name>.+?)\s+/(?P<hash>[0-9a-f]{8})\s+@')
#: The programs with a --from plan.
PLANNED = ('mempath', 'mempath-mpi')
#: Launchers whose options (and their numeric values) come before the program.
LAUNCHERS = ('srun', 'mpirun', 'mpiexec', 'aprun', 'ibrun')
#: Folders of the job scripts of build fixtures: they compile, they measure nothing.
FIXTURE_PREFIXES = ('MempathBuild_', 'NcclTestsBuild_')

PLANNING_CONFIG = '''site_configuration = {{
    'systems': [{{
        'name': 'planned', 'descr': 'the node of a topology snapshot (expected_duration.py)',
        'hostnames': ['.*'], 'modules_system': 'nomod',
        'partitions': [{{'name': 'node', 'scheduler': 'local', 'launcher': 'srunalloc',
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
    directives: list[str] = field(default_factory=list)  # its `#SBATCH` options
    expected_s: float | None = None
    detail: str = ''              # `bench: planned of cases`, or why not modelled


def default_mempath() -> str:
    for candidate in (os.environ.get('MEMPATH_BIN'), REPO / 'build' / 'mempath', shutil.which('mempath')):
        if candidate and Path(candidate).is_file():
            return str(candidate)
    raise NoEstimate('no mempath binary (build it, or pass --mempath / set MEMPATH_BIN)')


def default_mpi(mempath: str) -> str | None:
    """mempath-mpi beside the planning mempath, else MEMPATH_MPI_BIN, build/, PATH; None."""
    for candidate in (os.environ.get('MEMPATH_MPI_BIN'), Path(mempath).parent / 'mempath-mpi',
                      REPO / 'build' / 'mempath-mpi', shutil.which('mempath-mpi')):
        if candidate and Path(candidate).is_file():
            return str(candidate)
    return None


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
        text = script.read_text().splitlines()
        lines = [line for line in text if line.strip() and not line.startswith('#')]
        directives = [word for line in text if line.startswith('#SBATCH') for word in shlex.split(line)[1:]]
        name = names.get(folder.rsplit('_', 1)[-1], folder)
        checks.append(Check(name, shlex.split(lines[-1]) if lines else [], directives))
    return checks


def program_index(command: list[str]) -> int:
    """Where the program stands in a job's command: after a launcher and its options (and
    their numbers: `mpirun -np 4`); the program's own options, such as a path it is handed
    (`-m slurm.inventory --mempath PATH`), are no program of the job."""
    i = 0
    if command and Path(command[0]).name in LAUNCHERS:
        i = 1
        while i < len(command) and (command[i].startswith('-') or command[i].isdigit()):
            i += 1
    return i if i < len(command) else -1


def job_shape(launcher: list[str], directives: list[str]) -> tuple[int | None, int | None]:
    """(ranks, nodes) of a job from its launcher's options and its #SBATCH lines (srun's and
    mpirun's spellings); None where they do not say."""
    values: dict[str, str] = {}
    words = [*directives, *launcher]
    for i, word in enumerate(words):
        name, eq, value = word.partition('=')
        if not eq and i + 1 < len(words) and words[i + 1].isdigit():
            value = words[i + 1]
        if value.isdigit():
            for key, spellings in (('ranks', ('--ntasks', '-n', '-np')), ('per_node', ('--ntasks-per-node',)),
                                   ('nodes', ('--nodes', '-N'))):
                if name in spellings:
                    values[key] = value
    ranks = int(values['ranks']) if 'ranks' in values else None
    nodes = int(values['nodes']) if 'nodes' in values else None
    if nodes is None and ranks and 'per_node' in values:
        nodes = -(-ranks // int(values['per_node']))
    return ranks, nodes


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


def estimate(check: Check, mempath: str, snapshot: str, mpi: str | None = None) -> None:
    at = program_index(check.command)
    program = Path(check.command[at]).name if at >= 0 else 'nothing'
    shape = ''
    if program == 'mempath':
        args = plan_command(check.command[at + 1:])
        cmd, what = [mempath, *args, '--from', snapshot], args[0] if args else 'mempath'
    elif program == 'mempath-mpi':
        if mpi is None:
            check.detail = 'not modelled: no mempath-mpi binary to plan with (build it, or pass --mempath-mpi)'
            return
        args = plan_command(check.command[at + 1:])
        ranks, nodes = job_shape(check.command[:at], check.directives)
        extra = [*(['--plan-ranks', str(ranks)] if ranks else []), *(['--plan-nodes', str(nodes)] if nodes else [])]
        shape = (f', {ranks or "the default"} rank{"s" if ranks != 1 else ""} on {nodes or "the default"} '
                 f'node{"s" if nodes != 1 else ""}')
        cmd, what = [mpi, *args, '--from', snapshot, *extra], f'mempath-mpi {args[0] if args else ""}'
    else:
        script = ''
        if program.startswith('python') and at + 1 < len(check.command):  # a script, or `-m MODULE`
            script = (f'-m {check.command[at + 2]}' if check.command[at + 1] == '-m' and at + 2 < len(check.command)
                      else Path(check.command[at + 1]).name)
        check.detail = f'not modelled: runs {program}{" " + script if script else ""}, which has no --from plan'
        return
    out = run(cmd)
    fields = expect_fields(out.stdout)
    if out.returncode != 0 or fields is None:
        check.detail = f'not estimated: {last_line(out.stderr or out.stdout)}'
        return
    check.expected_s = float(fields['expected_s'])
    check.detail = f'{what}: {fields["planned"]} of {fields["cases"]} cases planned{shape}'


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
    parser.add_argument('--mempath-mpi', dest='mempath_mpi', help='the mempath-mpi binary that plans the '
                        'scale-out checks (default: MEMPATH_MPI_BIN, beside --mempath, build/, PATH)')
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
        mpi = opts.mempath_mpi or default_mpi(mempath)
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
                estimate(check, mempath, snapshot, mpi)
        print(report(checks, opts.tag, opts.snapshot or 'this node'))
        return 0
    except (NoEstimate, OSError, subprocess.SubprocessError, ValueError) as err:
        print(f'mempath: no duration estimate: {err}', file=sys.stderr)
        return 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))

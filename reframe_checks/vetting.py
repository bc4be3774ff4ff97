"""Fleet vetting: the short preset of slurm/vet_node.sh on one node (docs/vetting.md).

    reframe -C site_configs/SITE.py -c reframe_checks --tag vetting --distribute=idle -r

ReFrame's `--distribute` makes one copy of the check per node (idle ones, or `all`); each
runs slurm/vet_node.sh, which writes `vetting/<host>/{bw,memcpy,chase,pingpong}.h5`, kept
in the check's output folder; `python -m analysis fleet` reads them all (docs/vetting.md).

Sanity: the script's exit code 0, the summary lines of every command it ran sane
(mempath_run.summary_sane: at least one `status=ok`, none `failed`, all readable), and
one host folder with every command's HDF5 file (memcpy only on a node with a GPU). Performance variables, where the node has the path (GB/s):
`hbm_read_min` (the slowest GPU's HBM read, device memory, all SMs), `host_read_min` (the
slowest CPU socket reading its own node, all cores), `h2d_min` (the slowest GPU's H2D copy
engine transfer from pinned memory). No references: the fleet report compares nodes with
each other and with the partition references of the other checks.

Variables (`-S MempathVetting.NAME=VALUE`; the defaults are the preset, smaller ones are
for tests): size, chase_size, reps, round_trips, case_timeout, in_cache, and retest. The
script gets the check's time_limit less RESERVE_S (VET_TIME_LIMIT) and ends its own commands
there, so a hung GPU costs its cases, not the node's other files.

Confirm before condemning (docs/vetting.md): a second run with
`-S MempathVetting.retest=REPORT/pass1/retest.json` (and another `--prefix`: ReFrame wipes
a check's output folder when it runs again) re-runs each node's flagged cases into
`vetting/retest/<host>/`; a node the list does not name runs nothing and passes.
"""
from __future__ import annotations

import glob
import os

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import fixture, run_before, sanity_function, variable

import mempath_run
import mempath_summary
from mempath_build import REPO_ROOT, MempathBuild

#: Folder in the stage directory that the script writes `<host>/*.h5` into.
OUTDIR = 'vetting'
#: Commands of the preset that run on every node, and the one that needs a GPU.
ALWAYS = ('bw', 'chase', 'pingpong')
GPU_ONLY = 'memcpy'
#: Seconds of the check's time_limit that vet_node.sh leaves unused: the launcher's start,
#: SIGTERM to SIGKILL of a command cut at the deadline (job_clock.sh's 30 s grace), the
#: last file's write.
RESERVE_S = 120
#: The line vet_node.sh prints when it leaves the GPU commands out.
NO_GPU_LINE = r'no GPU, memcpy left out'
#: The line vet_node.sh prints in retest mode on a node the retest list does not name.
NOT_LISTED_LINE = r'nothing to retest'


def seconds(limit) -> float | None:
    """A ReFrame time limit (seconds, or text such as '20m', '1h30m', '90s') in seconds."""
    if limit is None:
        return None
    if isinstance(limit, (int, float)):
        return float(limit)
    import re
    text = str(limit).strip()
    parts = re.fullmatch(r'(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?', text)
    if not text or not parts:
        raise ValueError(f'time limit {limit!r}; valid: e.g. 20m, 1h30m, 90s')
    d, h, m, s = (int(g or 0) for g in parts.groups())
    return float(((d * 24 + h) * 60 + m) * 60 + s)


def script_budget(limit) -> int | None:
    """VET_TIME_LIMIT for a check with this time_limit: the limit less RESERVE_S (at least
    one minute); None without a limit."""
    total = seconds(limit)
    return None if total is None else max(60, int(total) - RESERVE_S)


def bw_minima(lines: list[mempath_summary.SummaryLine]) -> dict[str, float]:
    """The slowest GPU's HBM read and the slowest socket's local read, where present."""
    bw = (mempath_summary.bw_case(s) for s in lines if s.bench == 'bw')
    cases = mempath_summary.perf_cases(bw).values()
    reads = [c for c in cases if c.op == 'read']
    hbm = [c.median_GBps for c in reads
           if c.pu.startswith('gpu') and c.mem == c.pu and c.alloc == 'device' and c.kernel == 'grid']
    host = [c.median_GBps for c in reads
            if c.pu.startswith('cpu') and c.pu != 'cpus' and c.mem == 'numa' + c.pu[3:]
            and c.alloc == 'numa']
    return {name: min(values) for name, values in (('hbm_read_min', hbm), ('host_read_min', host))
            if values}


def h2d_minimum(lines: list[mempath_summary.SummaryLine]) -> dict[str, float]:
    transfers = [mempath_summary.transfer(s) for s in lines if s.bench == 'memcpy']
    h2d = [t.median_GBps for t in transfers
           if t.status == 'ok' and t.direction == 'h2d' and t.engine == 'ce'
           and t.alloc == 'pinned' and t.median_GBps is not None]
    return {'h2d_min': min(h2d)} if h2d else {}


@rfm.simple_test
class MempathVetting(rfm.RunOnlyRegressionTest, mempath_run.WholeNode):
    """slurm/vet_node.sh vetting: the preset on the node this copy of the check runs on."""

    #: Bytes per buffer of bw and memcpy (`VET_SIZE`); empty: mempath's own (bw: 1 GiB
    #: raised to 4x the caches on the path; a fixed 1GiB is refused on a 300 MiB-L3 host).
    size = variable(str, value='')
    #: Chase buffer (`VET_CHASE_SIZE`).
    chase_size = variable(str, value='1GiB')
    #: Timed repetitions of bw and memcpy (`VET_REPS`).
    reps = variable(int, value=15)  # vet_node.sh's own default: one preset either way
    #: Ping-pong round trips (`VET_ROUND_TRIPS`).
    round_trips = variable(int, value=10000)
    #: Per-case limit in seconds (`VET_TIMEOUT`, mempath --timeout): a hung case ends its
    #: command there, and the next command still runs.
    case_timeout = variable(int, value=300)
    #: Allow bw sizes below 4x the caches (`VET_IN_CACHE`; tests only).
    in_cache = variable(bool, value=False)
    #: The retest.json of the first pass's `analysis fleet` (`VET_RETEST`, an absolute
    #: path): re-run this node's flagged cases only; empty: the preset.
    retest = variable(str, value='')

    descr = 'mempath vetting preset (slurm/vet_node.sh) on one node'
    valid_systems = mempath_run.CPU_NODES
    valid_prog_environs = mempath_run.environs_for(valid_systems)
    tags = {'vetting'}
    num_tasks = 1
    num_tasks_per_node = 1
    exclusive_access = True
    keep_files = [OUTDIR]
    maintainers = ['mempath']
    # The preset takes minutes; only a hung node reaches this. Its worst case (every
    # command hung for case_timeout: 13 x 300 s on a quad GH200) is longer, so vet_node.sh
    # gets the limit less RESERVE_S (VET_TIME_LIMIT) and ends its own commands in time to
    # keep their files and print the summary lines sanity reads.
    time_limit = mempath_run.ACCEPTANCE_TIME_LIMIT

    mempath = fixture(MempathBuild, scope='environment')

    @run_before('run')
    def set_command(self):
        self.executable = os.path.join(REPO_ROOT, 'slurm', 'vet_node.sh')
        self.executable_opts = [OUTDIR]
        self.env_vars.update({
            'MEMPATH': self.mempath.executable_path, 'VET_SIZE': self.size,
            'VET_CHASE_SIZE': self.chase_size, 'VET_REPS': str(self.reps),
            'VET_ROUND_TRIPS': str(self.round_trips), 'VET_TIMEOUT': str(self.case_timeout),
            'VET_IN_CACHE': '1' if self.in_cache else '0', 'VET_RETEST': self.retest,
        })
        budget = script_budget(self.time_limit)
        if budget is not None:
            self.env_vars['VET_TIME_LIMIT'] = str(budget)

    def host_dirs(self) -> list[str]:
        return sorted(glob.glob(os.path.join(self.stagedir, OUTDIR, '*', '')))

    @sanity_function
    def vetted(self):
        stdout = os.path.join(self.stagedir, str(self.stdout))
        if self.retest:
            return self.retested(stdout)
        has_gpu = sn.evaluate(sn.count(sn.findall(NO_GPU_LINE, stdout))) == 0
        benches = ALWAYS + ((GPU_ONLY,) if has_gpu else ())
        hosts = self.host_dirs()
        checks = [
            sn.assert_eq(self.job.exitcode, 0,
                         msg='vet_node.sh exited with {0} (1: a case failed, 2: bad input)'),
            sn.assert_eq(len(hosts), 1, msg=f'{OUTDIR}/ holds {{0}} host folders, expected 1'),
        ]
        for bench in benches:
            checks.append(mempath_run.summary_sane(stdout, bench))
            if hosts:
                path = os.path.join(hosts[0], f'{bench}.h5')
                checks.append(sn.assert_true(os.path.isfile(path), msg=f'{path} was not written'))
        return sn.all(checks)

    def retested(self, stdout: str):
        """Exit code 0, and the node either not listed or its retest files written."""
        listed = sn.evaluate(sn.count(sn.findall(NOT_LISTED_LINE, stdout))) == 0
        written = glob.glob(os.path.join(self.stagedir, OUTDIR, 'retest', '*', '**', '*.h5'),
                            recursive=True)
        return sn.all([
            sn.assert_eq(self.job.exitcode, 0,
                         msg='vet_node.sh (retest) exited with {0} (1: a case failed, 2: bad input)'),
            sn.assert_true(not listed or written,
                           msg=f'the node is in {self.retest} but {OUTDIR}/retest/ holds no file'),
        ])

    @run_before('performance')
    def set_perf_variables(self):
        if self.retest:   # a few flagged cases: no node-wide minimum to report
            self.perf_variables = {}
            return
        stdout = os.path.join(self.stagedir, str(self.stdout))   # hooks run elsewhere
        lines = mempath_summary.read_summary(stdout)
        values = {**bw_minima(lines), **h2d_minimum(lines)}
        self.perf_variables = {
            name: sn.make_performance_function(sn.defer(value), 'GB/s')
            for name, value in sorted(values.items())
        }

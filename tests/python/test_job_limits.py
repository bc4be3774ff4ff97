"""Jobs that always report (issue 22): every job's worst case (the per-case limits of its
commands, summed) fits its sbatch --time and ReFrame time_limit, or the job ends its own
commands in time (slurm/job_clock.sh) to keep what they wrote and make its report.

The behavioural tests use stand-ins: a `mempath` that hangs and ignores SIGTERM (a hung
GPU), an `srun` that runs the task here, a Python that records the report call; the job's
end is SLURM_JOB_END_TIME a few seconds ahead, the reserves scaled down alike.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SLURM = REPO / "slurm"

import paper_set  # noqa: E402


def sbatch_time(script: Path) -> int:
    """The #SBATCH --time of a job script, in seconds."""
    found = re.search(r"^#SBATCH --time=(?:(\d+)-)?(\d+):(\d+):(\d+)$", script.read_text(), re.MULTILINE)
    assert found, f"{script.name} has no #SBATCH --time=HH:MM:SS"
    d, h, m, s = (int(g or 0) for g in found.groups())
    return ((d * 24 + h) * 60 + m) * 60 + s


def case_limit_default() -> int:
    """mempath's default --timeout (src/core/result_run.hpp): the longest one case may run;
    a case past it ends its command (docs/cli.md), so one command's worst case is one limit."""
    found = re.search(r"timeout_option\(const Options& opts, double fallback = (\d+)\)",
                      (REPO / "src" / "core" / "result_run.hpp").read_text())
    assert found
    return int(found[1])


def default(script: Path, variable: str) -> int:
    found = re.search(rf"\$\{{{variable}:-(\d+)\}}", script.read_text())
    assert found, f"{script.name} has no default for {variable}"
    return int(found[1])


# ---- the sums -----------------------------------------------------------------------------

#: The vetting preset's commands on a quad GH200 (vet_node.sh: bw, copy/cpu0-3, copy/gpu0-3,
#: memcpy, chase, chase_gpu, pingpong), each bounded by VET_TIMEOUT.
QUAD_PRESET_COMMANDS = 13


def bounded_by_the_clock(script: Path, commands: list[str]) -> None:
    """The script takes its deadline from job_clock.sh and each measuring or reporting
    command line runs under job_run."""
    text = script.read_text()
    assert "source slurm/job_clock.sh" in text or 'source "$root/slurm/job_clock.sh"' in text \
        or 'source "$here/slurm/job_clock.sh"' in text, script.name
    assert "job_clock_start" in text
    for pattern in commands:
        lines = [l for l in text.splitlines() if re.search(pattern, l) and not l.lstrip().startswith("#")]
        assert lines, f"{script.name}: no line runs {pattern}"
        for line in lines:
            assert "job_run" in line, f"{script.name}: {line.strip()!r} runs outside the job's clock"


def test_the_vetting_job_fits_its_time_by_its_own_deadline() -> None:
    script = SLURM / "vet_fleet.sbatch"
    limit = sbatch_time(script)
    per_case = default(SLURM / "vet_node.sh", "VET_TIMEOUT")
    reserve = default(script, "VET_REPORT_RESERVE")
    worst = QUAD_PRESET_COMMANDS * per_case + 2 * reserve  # the preset, both reports
    assert worst > limit  # 65 min of hung commands in a 30 min job: the sum alone cannot fit
    # ... so the passes end before the reports' reserve, and measuring keeps half the job.
    assert 2 * reserve <= limit / 2, (reserve, limit)
    bounded_by_the_clock(script, [r"^\s*srun |job_run 0 \"the first pass\"", r"-m analysis fleet"])
    bounded_by_the_clock(SLURM / "vet_node.sh", [r'"\$MEMPATH" "\$command" "\$@" "\$\{common',
                                                  r'"\$MEMPATH" topo'])


def test_the_paper_job_fits_its_time_by_its_own_deadline() -> None:
    script = SLURM / "paper.sbatch"
    limit = sbatch_time(script)
    worst = sum(s.minutes for s in paper_set.runnable(4, 1)) * 60
    assert worst > limit
    assert default(script, "MEMPATH_PAPER_RESERVE") <= limit / 4
    bounded_by_the_clock(script, [r'"\$\{cmd\[@\]\}"', r"-m analysis paper"])


def test_the_node_job_fits_its_time() -> None:
    script = SLURM / "characterise_node.sbatch"
    limit = sbatch_time(script)
    worst = case_limit_default() + 2 * 300 + default(script, "MEMPATH_REPORT_RESERVE")
    assert worst <= limit  # one bw command, two topo calls, the report
    bounded_by_the_clock(script, [r'"\$MEMPATH_BIN" "\$\{bw_args', r"-m analysis report"])


def test_the_nightly_job_keeps_time_for_its_report() -> None:
    script = SLURM / "nightly_acceptance.sbatch"
    limit = sbatch_time(script)
    reserve = default(SLURM / "nightly.sh", "MEMPATH_NIGHTLY_RESERVE")
    assert reserve <= limit / 4
    assert "exec slurm/nightly.sh" in script.read_text()
    bounded_by_the_clock(SLURM / "nightly.sh", [r"MEMPATH_REFRAME:-reframe"])


def test_every_reframe_check_fits_its_time_limit() -> None:
    """Each check runs one mempath or mempath-mpi command (its worst case: one per-case
    limit), except MempathVetting, whose script gets the time_limit less RESERVE_S."""
    import vetting
    from test_reframe import reframe
    out = reframe("-C", str(REPO / "site_configs" / "alps.py"), "--system", "daint:normal",
                  "-c", str(REPO / "reframe_checks"), "--describe", timeout=300)
    assert out.returncode == 0, out.stderr
    checks = json.loads(out.stdout)
    assert len(checks) > 20
    worst_one_command = case_limit_default()
    for check in checks:
        limit = float(check["time_limit"])
        if check["@class"] == "MempathVetting":
            budget = vetting.script_budget(limit)
            assert budget + vetting.RESERVE_S <= limit and vetting.RESERVE_S >= 30 + 60
            continue
        assert worst_one_command <= limit, (check["name"], limit)


def test_reframe_time_limits_convert_to_seconds() -> None:
    import vetting
    assert vetting.seconds("20m") == 1200 and vetting.seconds("1h30m") == 5400
    assert vetting.seconds(1200.0) == 1200 and vetting.script_budget("20m") == 1080
    with pytest.raises(ValueError):
        vetting.seconds("soon")


# ---- the clock ----------------------------------------------------------------------------

def clock(script: str, env: dict[str, str] | None = None, timeout: int = 60) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "MEMPATH_DEADLINE"))}
    full.update({"JOB_KILL_GRACE": "1", **(env or {})})
    return subprocess.run(["bash", "-c", f"source {shlex.quote(str(SLURM / 'job_clock.sh'))}; {script}"],
                          env=full, capture_output=True, text=True, timeout=timeout)


def test_the_deadline_is_the_job_end_less_the_reserve() -> None:
    now = int(time.time())
    out = clock("job_clock_start 30; job_left", {"SLURM_JOB_END_TIME": str(now + 100)})
    assert 65 <= int(out.stdout) <= 70, out.stdout + out.stderr
    # A parent's MEMPATH_DEADLINE or a LIMIT that comes earlier wins.
    out = clock("job_clock_start 0; job_left", {"SLURM_JOB_END_TIME": str(now + 100),
                                                "MEMPATH_DEADLINE": str(now + 50)})
    assert 45 <= int(out.stdout) <= 50, out.stdout
    out = clock("job_clock_start 0 20; job_left", {"SLURM_JOB_END_TIME": str(now + 100)})
    assert 15 <= int(out.stdout) <= 20, out.stdout
    out = clock("job_clock_start 0; echo left=$(job_left)")
    assert out.stdout.strip() == "left=", "no Slurm, no deadline: nothing is cut"


def test_a_hung_command_is_ended_at_the_deadline_and_later_ones_are_not_started() -> None:
    start = time.monotonic()
    out = clock("job_clock_start 0; job_run 0 hung bash -c \"trap '' TERM; sleep 60\"; echo rc=$?; "
                "job_run 0 next echo ran; echo rc=$?",
                {"SLURM_JOB_END_TIME": str(int(time.time()) + 3)})
    assert time.monotonic() - start < 15
    assert out.stdout.split() == ["rc=124", "rc=124"], out.stdout + out.stderr
    assert "hung cut after" in out.stderr and "next not started" in out.stderr
    quick = clock("job_clock_start 0; job_run 5 fine true; echo rc=$?; job_run 0 failing false; echo rc=$?")
    assert quick.stdout.split() == ["rc=0", "rc=1"], quick.stderr


@pytest.mark.parametrize("env, says", [({"SLURM_JOB_END_TIME": "tomorrow"}, "SLURM_JOB_END_TIME"),
                                       ({"MEMPATH_DEADLINE": "-3"}, "MEMPATH_DEADLINE")])
def test_a_bad_deadline_is_one_line_and_status_2(env: dict[str, str], says: str) -> None:
    out = clock("job_clock_start 0 || exit $?; echo went-on", env)
    assert out.returncode == 2 and says in out.stderr and len(out.stderr.splitlines()) == 1
    assert "went-on" not in out.stdout


# ---- the jobs, with a hung GPU ------------------------------------------------------------

TOPO = """  cpu0  cpu  numa0, 2 cores
  numa0  host  1 GiB
"""

#: A mempath whose chase hangs and ignores SIGTERM; every other command writes its file.
FAKE_MEMPATH = f"""#!/bin/bash
case $1 in
  topo) [[ $2 == --save ]] && exit 1; printf '%s' {shlex.quote(TOPO)}; exit 0 ;;
  chase) [[ ${{FAKE_HANG:-1}} == 1 ]] && {{ trap '' TERM; sleep 120; exit 0; }} ;;
esac
while [[ $# -gt 0 ]]; do [[ $1 == --output ]] && touch "$2"; shift; done
exit 0
"""


def stand_in(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    path.chmod(0o755)
    return path


def job_env(tmp_path: Path, seconds: int, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "VET_", "MEMPATH"))}
    env.update({"MEMPATH": str(stand_in(tmp_path / "bin", "mempath", FAKE_MEMPATH)),
                "SLURM_JOB_END_TIME": str(int(time.time()) + seconds), "JOB_KILL_GRACE": "1",
                "PATH": f"{tmp_path / 'bin'}:{env['PATH']}", **more})
    return env


def test_vet_node_ends_a_hung_command_at_its_deadline_and_keeps_the_other_files(tmp_path: Path) -> None:
    env = job_env(tmp_path, 600, VET_TIME_LIMIT="8", VET_RESERVE="2")
    start = time.monotonic()
    out = subprocess.run([str(SLURM / "vet_node.sh"), str(tmp_path / "vet")], env=env,
                         capture_output=True, text=True, timeout=120)
    took = time.monotonic() - start
    assert took < 8 + 10, took  # not the 120 s of the hung chase
    assert out.returncode == 1, out.stdout + out.stderr
    host = next((tmp_path / "vet").iterdir())
    assert (host / "bw.h5").is_file() and (host / "copy" / "cpu0.h5").is_file()
    assert "the deadline ended or left out chase pingpong" in out.stderr, out.stderr


def test_vet_node_takes_a_folder_whose_name_starts_with_a_dash(tmp_path: Path) -> None:
    env = job_env(tmp_path, 600, FAKE_HANG="0")
    out = subprocess.run([str(SLURM / "vet_node.sh"), "-vet"], env=env,
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "mkdir" not in out.stderr and "invalid option" not in out.stderr, out.stderr
    assert list((tmp_path / "-vet").glob("*/bw.h5")), out.stdout + out.stderr


FAKE_SRUN = """#!/bin/bash
# Runs the step's command here: drops srun's options (all --name=value or -w value).
while [[ $# -gt 0 && $1 == -* ]]; do [[ $1 == -w ]] && shift; shift; done
exec "$@"
"""

#: A Python that stands for `analysis fleet`: records its call and its report folder.
FAKE_PYTHON = """#!/bin/bash
echo "$*" >> "$FLEET_CALLS"
while [[ $# -gt 0 ]]; do [[ $1 == -o ]] && mkdir -p "$2" && touch "$2/nodes.csv"; shift; done
"""


def test_vet_fleet_writes_the_fleet_report_although_a_node_hangs(tmp_path: Path) -> None:
    stand_in(tmp_path / "bin", "srun", FAKE_SRUN)
    python = stand_in(tmp_path / "bin", "python", FAKE_PYTHON)
    env = job_env(tmp_path, 24, VET_PYTHON=str(python), VET_REPORT_RESERVE="4",
                  VET_RESERVE="2", FLEET_CALLS=str(tmp_path / "calls"))
    start = time.monotonic()
    out = subprocess.run(["bash", str(SLURM / "vet_fleet.sbatch"), str(tmp_path / "vet")], cwd=REPO,
                         env=env, capture_output=True, text=True, timeout=120)
    took = time.monotonic() - start
    assert took < 24, (took, out.stdout, out.stderr)
    assert out.returncode == 1, out.stdout + out.stderr
    calls = (tmp_path / "calls").read_text().splitlines()
    assert len(calls) == 2 and calls[-1].endswith(f"-o {tmp_path / 'vet' / 'report'}"), calls
    assert (tmp_path / "vet" / "report" / "nodes.csv").is_file()
    assert "fleet report in" in out.stdout


def test_the_node_job_ends_bw_at_its_deadline_and_exits_1(tmp_path: Path) -> None:
    hung = stand_in(tmp_path / "bin", "hung-mempath", "#!/bin/bash\n[[ $1 == topo ]] && exit 0\n"
                    "trap '' TERM; sleep 120\n")
    env = job_env(tmp_path, 8, MEMPATH_BIN=str(hung), MEMPATH_REPORT="0", MEMPATH_REPORT_RESERVE="3",
                  MEMPATH_OUT=str(tmp_path / "out"), MEMPATH_REPO=str(REPO))
    start = time.monotonic()
    out = subprocess.run(["bash", str(SLURM / "characterise_node.sbatch")], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=120)
    assert time.monotonic() - start < 8 + 5
    assert out.returncode == 1 and "mempath bw cut after" in out.stderr, out.stdout + out.stderr


def test_the_paper_job_names_each_step_cut_or_not_started_at_its_deadline(tmp_path: Path) -> None:
    """A step ended or skipped by the job's clock is named in the job's log as such (its own
    output file holds the line), counted apart from the steps that failed, and the job exits 1."""
    hung = stand_in(tmp_path / "bin", "hung-mempath", "#!/bin/bash\n[[ $1 == topo ]] && exit 0\n"
                    "trap '' TERM; sleep 120\n")
    env = job_env(tmp_path, 6, MEMPATH_BIN=str(hung), MEMPATH_PAPER_RESERVE="2",
                  MEMPATH_OUT=str(tmp_path / "set"), MEMPATH_PYTHON=sys.executable)
    out = subprocess.run(["bash", str(SLURM / "paper.sbatch")], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=120)
    log = out.stdout + out.stderr
    assert out.returncode == 1, log
    steps = re.findall(r"^mempath: (MempathPaper\w+): ", log, re.MULTILINE)
    cut = re.findall(r"^mempath: (MempathPaper\w+) cut after \d+ s \(the job's deadline\)", log, re.MULTILINE)
    skipped = re.findall(r"^mempath: (MempathPaper\w+) not started: the job's deadline", log, re.MULTILINE)
    assert cut == steps[:1] and skipped == steps[1:] and len(steps) >= 2, log
    assert f"0 step(s) failed, {len(steps)} cut or not started at the job's deadline" in log, log

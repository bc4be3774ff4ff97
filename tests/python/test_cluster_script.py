"""slurm/ci/cluster.sh runs as root on shared machines (issue 12, security): these unit
tests call its functions (the script only defines them when sourced) on folders of their
own, so they need no cluster and never touch a running one (no `stop`, no namespaces).

- `stop` kills only processes the script recorded, and only while PID, start time and
  command name all still match: a pid file naming someone else's process is ignored;
- the state folder is private: made by mktemp (0700, root), or a given one only when root
  owns it and no one else may write it, nor any folder above it (unless sticky, as /tmp); the folder in use is recorded in a root-only file;
- values go into slurm.conf literally, whatever characters they hold.
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLUSTER = REPO / "slurm" / "ci" / "cluster.sh"
ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="the script accepts only root-owned folders")


def sourced(script: str, record: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """SCRIPT run in bash after sourcing cluster.sh, with its record file moved to RECORD."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("MEMPATH_SLURM")}
    full.update(env or {})
    return subprocess.run(["bash", "-c", f"source {shlex.quote(str(CLUSTER))}; "
                           f"RECORD={shlex.quote(str(record))}; {script}"],
                          env=full, capture_output=True, text=True, timeout=60)


def start_time(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]


@pytest.fixture
def sleeper(tmp_path: Path):
    """A process that is not the cluster's: it must survive every stop below."""
    proc = subprocess.Popen(["sleep", "300"])
    yield proc
    proc.kill()
    proc.wait()


@pytest.fixture
def state(tmp_path: Path) -> Path:
    folder = tmp_path / "state"
    (folder / "pids").mkdir(parents=True)
    (folder / "munge").mkdir()
    folder.chmod(0o700)
    return folder


def alive(proc: subprocess.Popen) -> bool:
    time.sleep(0.3)
    return proc.poll() is None


def test_stop_ignores_pid_files_naming_another_process(tmp_path: Path, state: Path, sleeper) -> None:
    """The old `stop` killed whatever PID a file under /tmp/mempath-slurm named if its
    comm matched; now plain pid files count for nothing and records must match."""
    for name in ("slurmd-n1", "slurmd-n2", "slurmctld"):
        (state / "pids" / f"{name}.pid").write_text(f"{sleeper.pid}\n")
        (state / "pids" / f"{name}.proc").write_text(f"{sleeper.pid} {start_time(sleeper.pid)}\n")
    (state / "munge" / "munged.pid").write_text(f"{sleeper.pid}\n")
    out = sourced(f"DIR={state}; stop_recorded slurmd-n1:slurmd slurmd-n2:slurmd "
                  "slurmctld:slurmctld munged:munged", tmp_path / "record")
    assert out.returncode == 0, out.stderr
    assert alive(sleeper)


@pytest.mark.parametrize("record, killed", [("{pid} {start}", True), ("{pid} 1", False),
                                            ("{pid}", False), ("x {start}", False)])
def test_stop_kills_only_the_very_process_recorded(tmp_path: Path, state: Path, sleeper,
                                                   record: str, killed: bool) -> None:
    """PID, start time (a reused PID has another) and command name must all match."""
    text = record.format(pid=sleeper.pid, start=start_time(sleeper.pid))
    (state / "pids" / "sleeper.proc").write_text(text + "\n")
    out = sourced(f"DIR={state}; stop_recorded sleeper:sleep", tmp_path / "record")
    assert out.returncode == 0, out.stderr
    assert alive(sleeper) is not killed
    assert not (state / "pids" / "sleeper.proc").exists()


def test_start_time_is_field_22_even_with_odd_command_names(tmp_path: Path) -> None:
    odd = tmp_path / "a) b (c"
    shutil.copy(shutil.which("sleep"), odd)
    proc = subprocess.Popen([str(odd), "300"])
    try:
        time.sleep(0.2)
        out = sourced(f"starttime {proc.pid}", tmp_path / "record")
        assert out.stdout.strip() == start_time(proc.pid), out.stderr
    finally:
        proc.kill()
        proc.wait()


@needs_root
def test_new_state_folder_is_private_and_recorded(tmp_path: Path) -> None:
    record = tmp_path / "record"
    out = sourced("new_dir; first=$DIR; new_dir; echo $first $DIR", record)
    assert out.returncode == 0, out.stderr
    first, second = map(Path, out.stdout.split())
    try:
        assert not first.exists(), "the previous folder start made is removed"
        info = second.stat()
        assert info.st_uid == 0 and (info.st_mode & 0o777) == 0o700
        assert record.read_text().strip() == str(second)
        assert record.stat().st_uid == 0 and (record.stat().st_mode & 0o777) == 0o600
        # status/exec/stop find it there.
        found = sourced("use_dir; echo $DIR $CONF", record)
        assert found.stdout.split() == [str(second), f"{second}/etc/slurm.conf"], found.stderr
    finally:
        shutil.rmtree(second, ignore_errors=True)


@needs_root
def test_a_given_folder_is_emptied_in_place_or_made_private(tmp_path: Path) -> None:
    given = tmp_path / "given"
    out = sourced("new_dir; echo $DIR", tmp_path / "record", {"MEMPATH_SLURM_DIR": str(given)})
    assert out.returncode == 0 and out.stdout.strip() == str(given), out.stderr
    assert given.stat().st_mode & 0o777 == 0o700
    (given / "log").mkdir()
    inode = given.stat().st_ino
    again = sourced("use_dir; new_dir", tmp_path / "record", {"MEMPATH_SLURM_DIR": str(given)})
    assert again.returncode == 0, again.stderr
    # Emptied, never removed and made again (that left the path free for someone else).
    assert given.stat().st_ino == inode and not (given / "log").exists()


def unsafe_folders(tmp_path: Path):
    writable = tmp_path / "writable"
    writable.mkdir(mode=0o777)
    writable.chmod(0o1777)
    link = tmp_path / "link"
    link.symlink_to(writable)
    foreign = tmp_path / "foreign"
    foreign.mkdir(mode=0o700)
    if ROOT:
        os.chown(foreign, 65534, 65534)
    # A state folder in a parent someone else may write can be renamed away and replaced.
    open_parent = tmp_path / "open"
    open_parent.mkdir()
    open_parent.chmod(0o777)
    their_parent = tmp_path / "theirs"
    their_parent.mkdir(mode=0o755)
    if ROOT:
        os.chown(their_parent, 65534, 65534)
    linked_parent = tmp_path / "linked"
    linked_parent.symlink_to(open_parent)
    full = tmp_path / "full"
    full.mkdir(mode=0o700)
    (full / "precious").write_text("x")
    return {"writable": writable, "link": link, "foreign": foreign, "full": full,
            "odd characters": Path(f"{tmp_path}/a|b&c"), "system": Path("/tmp"),
            "writable parent": open_parent / "state", "parent of another user": their_parent / "state",
            "under a linked parent": linked_parent / "state"}


@pytest.mark.parametrize("which", ["writable", "link", "foreign", "full", "odd characters", "system",
                                   "writable parent", "parent of another user",
                                   "under a linked parent"])
@pytest.mark.parametrize("step", ["new_dir", "use_dir"])
def test_unsafe_state_folders_are_refused_with_one_line(tmp_path: Path, which: str, step: str) -> None:
    folder = unsafe_folders(tmp_path)[which]
    if which == "parent of another user" and not ROOT:
        pytest.skip("only root can make a folder owned by someone else")
    if step == "use_dir" and which == "full":
        pytest.skip("a full private folder is a fine folder to look into")
    out = sourced(f"{step}; echo went-on", tmp_path / "record", {"MEMPATH_SLURM_DIR": str(folder)})
    assert out.returncode == 2, out.stdout + out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "MEMPATH_SLURM_DIR" in out.stderr
    assert "went-on" not in out.stdout and not (tmp_path / "record").exists()
    if which == "full":
        assert (folder / "precious").exists()


def test_a_record_not_owned_by_root_is_not_trusted(tmp_path: Path) -> None:
    if not ROOT:
        pytest.skip("only root can make a file owned by someone else")
    record = tmp_path / "record"
    record.write_text("/tmp/somewhere-else\n")
    os.chown(record, 65534, 65534)
    out = sourced("use_dir; echo dir=$DIR", record)
    assert out.returncode == 0 and out.stdout.strip() == "dir=", out.stdout + out.stderr


def test_config_values_are_written_literally(tmp_path: Path) -> None:
    template = tmp_path / "t.in"
    template.write_text("a=@DIR@/state\nb=@HW@ @DIR@\n")
    value = r"/x|y&z\1$(id)"
    out = sourced(f"render {template} DIR={shlex.quote(value)} HW='CPUs=4 Boards=1'", tmp_path / "record")
    assert out.stdout == f"a={value}/state\nb=CPUs=4 Boards=1 {value}\n", out.stderr

"""The one reader of result files (issue 22): hostile and foreign files, crafted here with
h5py, through `mempath export` (src/core/result_reader.cpp) and through the analysis'
report, compare and fleet (analysis/results/io.py). Each is refused in one line with exit
2, or read with the stated text policy (docs/schema.md, "Reading a result file")."""
from __future__ import annotations

import csv
import io
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np
import pytest

from conftest import DATA, analysis_cli, run
from h5fixtures import case, topology, write_run

# Long enough for a slow CI machine to export a tiny file, short enough to catch a hang.
LIMIT_S = 60


def good_run(path: Path) -> Path:
    return write_run(path, [case(), case(mem="numa1", median_GBps=200.0)],
                     topology=topology("gh200_single"))


def edited(tmp: Path, name: str, edit: Callable[[h5py.File], None]) -> Path:
    path = good_run(tmp / name)
    with h5py.File(path, "r+") as f:
        edit(f)
    return path


def export(binary: Path, *args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary), "export", *map(str, args)], capture_output=True,
                          timeout=LIMIT_S)


def one_error_line(proc: subprocess.CompletedProcess, rc: int = 2) -> str:
    err = proc.stderr.decode("utf-8")
    assert proc.returncode == rc, (proc.returncode, err)
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def soft_cycle(f: h5py.File) -> None:
    f["bw/loop"] = h5py.SoftLink("/bw")


def hard_cycle(f: h5py.File) -> None:
    f["bw/cases/again"] = f["bw"]  # a group inside its own table: hard-linked to its parent


def external(f: h5py.File) -> None:
    f["bw/elsewhere"] = h5py.ExternalLink("/etc/passwd.h5", "/")


def schema_2(f: h5py.File) -> None:
    f.attrs["schema_version"] = 2


def foreign(f: h5py.File) -> None:
    del f.attrs["schema_version"]


LINKS = {"soft-link cycle": (soft_cycle, "bw/loop is a soft link"),
         "hard-link cycle": (hard_cycle, "bw/cases/again links to an object already reached"),
         "external link": (external, "bw/elsewhere is an external link")}
REFUSED = {**LINKS,
           "schema_version 2": (schema_2, "schema_version 2 is not supported"),
           "foreign HDF5": (foreign, "no schema_version attribute")}


@pytest.mark.parametrize("kind", list(REFUSED))
def test_export_refuses_in_one_line(mempath_cpu_bin: Path, tmp_path: Path, kind: str) -> None:
    edit, expected = REFUSED[kind]
    path = edited(tmp_path, "bad.h5", edit)
    for args in ([], ["--format", "json"]):  # before anything is written, whatever the format
        proc = export(mempath_cpu_bin, path, *args, "-o", tmp_path / "out")
        err = one_error_line(proc)
        assert expected in err and ("valid" in err or "give" in err or "reads" in err), err
        assert not (tmp_path / "out").exists() and proc.stdout == b""


def test_export_of_a_file_on_which_libhdf5_crashes_is_one_line(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    """Byte damage (found by tests/fuzz) on which Debian's libhdf5 1.10 dies of SIGSEGV in its
    own code (H5HG_read) while mempath reads the file: one line and exit 2, as for any file
    read_run refuses, and nothing written. (A newer libhdf5 may refuse it itself: one line too.)"""
    path = DATA / "damaged" / "libhdf5_crash.h5"
    for args in ([], ["--format", "json"]):
        proc = export(mempath_cpu_bin, path, *args, "-o", tmp_path / "out")
        err = one_error_line(proc)
        assert "libhdf5_crash.h5" in err and "give an intact mempath result file" in err, err
        assert not (tmp_path / "out").exists() and proc.stdout == b""


def test_export_of_a_file_with_no_mempath_attributes_at_all(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    path = tmp_path / "other.h5"
    with h5py.File(path, "w") as f:
        f["data/x"] = np.arange(4)
        f.attrs["creator"] = "another program"
    err = one_error_line(export(mempath_cpu_bin, path, "--format", "json"))
    assert "no schema_version attribute, so not a mempath result file" in err and "give a file" in err


def test_export_names_that_would_leave_the_folder_are_refused(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    def escape(f: h5py.File) -> None:
        f.create_group("..").create_group("..").create_group("x").create_dataset("n", data=np.arange(3))
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    path = edited(deep, "evil.h5", escape)
    folder = deep / "out"  # out/../../x.csv would be tmp_path/a/x.csv
    err = one_error_line(export(mempath_cpu_bin, path, "-o", folder))
    assert "table '../../x' cannot be a file name" in err and "valid in a name" in err, err
    assert not folder.exists() and list(tmp_path.rglob("*.csv")) == []
    assert sorted(p.name for p in deep.iterdir()) == ["evil.h5"]  # no temporary folder left
    # As JSON the name is only a key: the table is there, under its name.
    doc = json.loads(export(mempath_cpu_bin, path, "--format", "json").stdout)
    assert doc["tables"]["../../x"]["rows"][2] == {"n": 2}


def test_export_with_text_that_is_not_utf8_is_valid_json(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    utf8 = h5py.string_dtype("utf-8")

    def garble(f: h5py.File) -> None:
        f.attrs.create("host", b"node\xff\xfe-1", dtype=utf8)
        f.attrs.create("tool_version", b"caf\xc3\xa9 \xe2\x82", dtype=h5py.string_dtype("ascii"))
        del f["bw/cases/reason"]
        f["bw/cases"].create_dataset("reason", data=np.array([b"ok \xc0\xaf", b"\xed\xa0\x80x"], dtype=object),
                                     dtype=utf8)
        f["bw/samples"].create_dataset(b"bad\xffname", data=np.arange(len(f["bw/samples/rep"])))
    path = edited(tmp_path, "garbled.h5", garble)
    proc = export(mempath_cpu_bin, path, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout.decode("utf-8"))  # strict: the bytes are UTF-8 and JSON
    attributes, cases = doc["attributes"], doc["tables"]["bw/cases"]
    # The stated policy, Python's errors="backslashreplace": each bad byte as \xNN.
    assert attributes["host"] == "node\\xff\\xfe-1"
    assert attributes["tool_version"] == "café \\xe2\\x82"
    assert [row["reason"] for row in cases["rows"]] == ["ok \\xc0\\xaf", "\\xed\\xa0\\x80x"]
    assert "bad\\xffname" in doc["tables"]["bw/samples"]["units"]
    # The analysis decodes the same bytes the same way.
    from analysis.results.io import load_run
    loaded = load_run(path)
    assert loaded.attrs["host"] == attributes["host"]
    assert loaded.tables["bw/cases"]["reason"].tolist() == [row["reason"] for row in cases["rows"]]


def test_csv_text_a_spreadsheet_would_evaluate_is_neutralised(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    texts = ["=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1", "plain", "a;=1", ""]

    def formulas(f: h5py.File) -> None:
        del f["bw/cases/reason"]
        f["bw/cases"].create_dataset("reason", data=texts[:2], dtype=h5py.string_dtype("utf-8"))
        f.create_dataset("inject/t/text", data=texts, dtype=h5py.string_dtype("utf-8"))
        f.create_dataset("inject/t/value", data=np.array([-1.5, 2, -3, 4, 5, 6, 7, 8, 9]))
        f.create_dataset("inject/t/=n", data=np.arange(-4, 5))
    path = edited(tmp_path, "formula.h5", formulas)
    text = export(mempath_cpu_bin, path, "--table", "inject/t").stdout.decode()
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows[0] == ["'=n", "text", "value"]  # a header cell is text too
    assert [r[1] for r in rows[1:]] == ["'=cmd|' /C calc'!A0", "'+1+1", "'-2+3", "'@SUM(A1)", "'\t=1",
                                        "'\r=1", "plain", "a;=1", ""]
    assert '"a;=1"' in text  # ';' separates cells in some locales: quoted
    assert [r[0] for r in rows[1:]][:2] == ["-4", "-3"] and rows[1][2] == "-1.5"  # numbers unchanged
    folder = tmp_path / "all"
    assert export(mempath_cpu_bin, path, "-o", folder).returncode == 0
    reasons = list(csv.DictReader((folder / "bw" / "cases.csv").open(newline="")))
    assert [r["reason"] for r in reasons] == ["'=cmd|' /C calc'!A0", "'+1+1"]


def refused_by_analysis(bad: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The one line each of report, compare and the fleet's reader (load_cases_run, which
    the fleet turns into a failed node and one line, tests/python/test_fleet.py) give."""
    from analysis.__main__ import main
    from analysis.fleet.table import load_cases_run
    from analysis.results.io import RunFileError
    lines = []
    for args in (["report", bad, "-o", out], ["compare", bad, bad]):
        assert main(list(map(str, args))) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, err
        lines.append(err)
    with pytest.raises(RunFileError) as error:
        load_cases_run(bad)
    lines.append(str(error.value) + "\n")
    assert lines[2].count("\n") == 1, lines[2]
    return lines


@pytest.mark.parametrize("kind", ["[1,2]", "\"text\"", "3", "null", "{\"processors\": 1}"])
def test_a_topology_that_is_json_but_not_an_object_is_one_line(tmp_path: Path, kind: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    bad = edited(tmp_path, "bad.h5", lambda f: f.attrs.__setitem__("topology", kind))
    for line in refused_by_analysis(bad, tmp_path / "report", capsys):
        assert "bad.h5: the topology attribute" in line and "valid: a JSON object" in line, line


def test_fleet_names_a_topology_that_is_not_an_object_in_one_line(tmp_path: Path) -> None:
    bad = edited(tmp_path, "bad.h5", lambda f: f.attrs.__setitem__("topology", "[1,2]"))
    fleet = analysis_cli("fleet", good_run(tmp_path / "good.h5"), bad, "-o", tmp_path / "fleet")
    assert "Traceback" not in fleet.stderr and fleet.returncode == 1, fleet.stderr
    lines = [line for line in fleet.stderr.splitlines() if "bad.h5" in line]
    assert len(lines) == 1 and "the topology attribute is JSON of type list" in lines[0], fleet.stderr


@pytest.mark.parametrize("kind", list(REFUSED))
def test_report_compare_and_fleet_refuse_in_one_line(tmp_path: Path, kind: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    edit, expected = REFUSED[kind]
    bad = edited(tmp_path, "bad.h5", edit)
    for line in refused_by_analysis(bad, tmp_path / "report", capsys):
        assert "bad.h5: " in line and expected in line and any(w in line for w in ("valid", "reads", "give")), line


#: Byte damage (found by tests/fuzz) on which HDF5 2.0, h5py 3.16's, loops for ever.
HANG = DATA.parents[1] / "fuzz" / "crashes" / "results" / "libhdf5_hang.h5"


def test_report_compare_and_fleet_end_on_a_file_on_which_libhdf5_hangs(tmp_path: Path) -> None:
    """No Python code can interrupt libhdf5's own loop: the commands read in child processes
    with a deadline (analysis/results/workers.py), so the file is one line naming it, and
    the other files are read. (Another libhdf5 may refuse the file at once: one line too.)"""
    runs = tmp_path / "runs"
    runs.mkdir()
    good = good_run(runs / "good.h5")
    shutil.copy(HANG, runs / "hang.h5")
    env = {**os.environ, "MEMPATH_READ_DEADLINE_S": "2"}
    hangs = h5py.version.hdf5_version == "2.0.0"
    for args, rc in ((["report", good, runs / "hang.h5", "-o", tmp_path / "report"], 2),
                     (["compare", good, runs], 2),
                     (["fleet", runs, "-o", tmp_path / "fleet"], 1)):
        proc = subprocess.run([sys.executable, "-m", "analysis", *map(str, args)], cwd=DATA.parents[2],
                              capture_output=True, text=True, timeout=LIMIT_S * 2, env=env)
        assert proc.returncode == rc and "Traceback" not in proc.stderr, proc.stderr
        lines = [line for line in proc.stderr.splitlines() if "hang.h5" in line]
        assert lines and all("damaged, give an intact mempath result file" in line for line in lines), lines
        if hangs:
            assert "reading it did not end within 2 s (the HDF5 library hangs on it)" in lines[0]
    assert (tmp_path / "report" / "summary.md").is_file()  # from good.h5
    assert (tmp_path / "fleet" / "summary.md").is_file()


def _crashing_on(victim: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk kills its process where it opens ``victim``, as libhdf5's SIGSEGV
    does (the reading processes are forks: they inherit this)."""
    import faulthandler

    from analysis.results import h5file
    real = h5file._open

    def crashing(path: Path):
        if Path(path) == victim:
            faulthandler.disable()  # pytest's would print the dead process's stack
            os.kill(os.getpid(), signal.SIGSEGV)
        return real(path)
    monkeypatch.setattr(h5file, "_open", crashing)


def test_report_and_compare_name_a_file_that_crashes_its_reader(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from analysis.compare.read import read_side
    from analysis.results import workers
    from analysis.results.io import RunFileError, load_runs
    files = [good_run(tmp_path / f"n{i}.h5") for i in range(5)]
    _crashing_on(files[2], monkeypatch)
    monkeypatch.setattr(workers, "CHUNK_FILES", 2)
    line = f"{files[2]}: the HDF5 library crashed reading it; the file is damaged, give an intact mempath result file"
    side = read_side(files, jobs=2)
    assert side.rejected == [line] and side.paths == files[:2] + files[3:]
    rejected: list[str] = []
    runs = load_runs(files, rejected=rejected)
    assert rejected == [line] and [run.path for run in runs.runs] == files[:2] + files[3:]
    with pytest.raises(RunFileError, match="crashed reading it"):
        load_runs(files)


def test_fleet_reads_text_that_is_not_utf8(tmp_path: Path) -> None:
    from analysis.fleet.table import load_cases_run
    bad = edited(tmp_path, "garbled.h5", lambda f: f.attrs.create(
        "host", b"n\xffde", dtype=h5py.string_dtype("utf-8")))
    assert load_cases_run(bad).host == "n\\xffde"


def test_export_json_overwrite_on_a_full_disk_keeps_the_old_export(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    """A full disk, for real: a 64 KiB tmpfs in a mount namespace of its own (root or
    unprivileged user namespaces needed, else skipped; the file size limit test below runs
    everywhere)."""
    if not shutil.which("unshare"):
        pytest.skip("no unshare(1)")
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size=64k none {tmp_path}"],
                           capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {probe.stderr.decode().strip()}")
    big = tmp_path / "big.h5"
    write_run(big, [case(mem=f"numa{i}", reason="x" * 200) for i in range(600)],
              topology=topology("gh200_single"))
    disk = tmp_path / "disk"
    disk.mkdir()
    old_folder = disk / "old_csv"
    script = f"""set -e
mount -t tmpfs -o size=64k none {disk}
printf '{{"old": true}}\\n' > {disk}/run.json
mkdir -p {old_folder}/bw && echo old > {old_folder}/bw/cases.csv
set +e
{mempath_cpu_bin} export {big} --format json -o {disk}/run.json --overwrite; echo "rc=$?"
{mempath_cpu_bin} export {big} -o {old_folder} --overwrite; echo "rc=$?"
cat {disk}/run.json; cat {old_folder}/bw/cases.csv; ls -A {disk}
"""
    proc = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True,
                          timeout=LIMIT_S)
    out, errors = proc.stdout.splitlines(), proc.stderr.splitlines()
    assert out[2:] == ['{"old": true}', "old", "old_csv", "run.json"], out  # no temporaries left
    assert out[:2] == ["rc=1", "rc=1"], proc.stdout + proc.stderr
    assert len(errors) == 2 and all("No space left on device; nothing was replaced" in e for e in errors), errors


def _limit_file_size() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


def test_export_overwrite_that_cannot_be_written_keeps_the_old_export(mempath_cpu_bin: Path,
                                                                      tmp_path: Path) -> None:
    """The full-disk path without a mount: a file size limit fails the same write(2)."""
    big = write_run(tmp_path / "big.h5", [case(mem=f"numa{i}", reason="x" * 200) for i in range(100)],
                    topology=topology("gh200_single"))
    target = tmp_path / "run.json"
    target.write_text('{"old": true}\n')
    folder = tmp_path / "run_csv"
    (folder / "bw").mkdir(parents=True)
    (folder / "bw" / "cases.csv").write_text("old\n")
    for args in (["--format", "json", "-o", target], ["-o", folder]):
        proc = subprocess.run([str(mempath_cpu_bin), "export", str(big), *map(str, args), "--overwrite"],
                              capture_output=True, text=True, timeout=LIMIT_S, preexec_fn=_limit_file_size)
        assert target.read_text() == '{"old": true}\n' and (folder / "bw" / "cases.csv").read_text() == "old\n"
        assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
        assert "File too large; nothing was replaced" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.h5", "run.json", "run_csv"]
    # Without the limit the same command replaces both whole.
    for args in (["--format", "json", "-o", target], ["-o", folder]):
        run(mempath_cpu_bin, "export", str(big), *map(str, args), "--overwrite")
    assert len(json.loads(target.read_text())["tables"]["bw/cases"]["rows"]) == 100
    assert sorted(p.name for p in folder.rglob("*")) == ["bw", "cases.csv", "samples.csv"]


def test_export_to_a_full_stdout_is_one_line(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    path = good_run(tmp_path / "run.h5")
    with open("/dev/full", "wb") as full:
        proc = subprocess.run([str(mempath_cpu_bin), "export", str(path), "--format", "json"], stdout=full,
                              stderr=subprocess.PIPE, timeout=LIMIT_S)
    err = one_error_line(proc, rc=1)
    assert "cannot write to standard output: No space left on device" in err


def test_overwrite_replaces_only_a_folder_of_csv_files(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    path = good_run(tmp_path / "run.h5")
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me\n")
    err = one_error_line(export(mempath_cpu_bin, path, "-o", folder, "--overwrite"))
    assert "is not a folder of CSV files from an earlier export" in err
    assert (folder / "notes.txt").read_text() == "keep me\n"
    link = tmp_path / "link"
    link.symlink_to(folder)
    one_error_line(export(mempath_cpu_bin, path, "-o", link, "--overwrite"))
    assert link.is_symlink() and (folder / "notes.txt").is_file()

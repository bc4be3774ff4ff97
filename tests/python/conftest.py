"""Shared pytest fixtures: where the mempath binaries are, and the GPU marker.

GPU tests are marked `gpu` and skip cleanly where no NVIDIA GPU is visible; run them on
a GPU node with the same test command. Tests that open pages in a headless Chromium are
marked `browser` and skip where none is installed (`apt-get install chromium`; .ci/run
installs it and fails if they skipped). Tests of the CI's two-node Slurm cluster are marked
`slurm` and run only with MEMPATH_SLURM_CLUSTER=1 (set after `slurm/ci/cluster.sh start`).
Tests that build a second mempath of their own (ReFrame's build fixture, the install tree,
the sanitizer build of the fuzzer) are marked `ci`: the README's test command leaves them to
CI's own pass, which sets MEMPATH_CI_TESTS=1 (docs/testing.md, "Two tiers").

MEMPATH_UNLIKE_HOST=1 runs the tests as on a host unlike the ones they were written on
(issue 47: a fixed buffer size the cache guard refused failed the README's test command on a
VM of a 480 MiB cache): the binary sees a 480 MiB last-level cache, an NVML that answers (the
fake, a healthy H200's readings), a cpufreq tree (the `performance` governor), and every
worker runs on one CPU. `-m binary` selects the tests that run a mempath binary (BINARY_FIXTURES,
RUNS_THE_BINARY); CI runs them so (docs/testing.md, "Another host").

The test command runs pytest in parallel (pytest-xdist, a test file per worker, so module
fixtures are made once); GPU tests take turns on a lock, so no two measure one GPU at once.
"""
from __future__ import annotations

import fcntl
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import shared_render

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "python" / "data"  # committed result files and topologies


def run(binary: Path, *args: str, check_rc: int | None = 0) -> subprocess.CompletedProcess:
    """A binary's run, its output as text; asserts the exit status unless check_rc is None."""
    proc = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=600)
    if check_rc is not None:
        assert proc.returncode == check_rc, proc.stderr + proc.stdout
    return proc


def summaries(stdout: str, bench: str = "bw") -> list[dict[str, str]]:
    """The key=value fields of every `MEMPATH <bench>` summary line."""
    out = []
    for m in re.finditer(rf"^MEMPATH {bench} (?P<kv>.*)$", stdout, re.M):
        kv = dict(re.findall(r'(\w+)=("[^"]*"|\S+)', m.group("kv")))
        out.append({k: v.strip('"') for k, v in kv.items()})
    return out


def assert_png(path: Path) -> None:
    """A drawn figure: a PNG of some size that is not one flat colour."""
    import matplotlib.image  # only the analysis tests draw
    import numpy as np
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = matplotlib.image.imread(path)
    assert image.shape[0] > 100 and image.shape[1] > 100
    assert float(np.std(image[..., :3])) > 0.01, f"{path.name} is blank"


def figure_suffixes() -> tuple[str, ...]:
    """The files a figure is written as: its PNG alone under MEMPATH_FIGURES=png (the test
    command's default), PNG and PDF otherwise. Read at each call, not at import: a test may
    set the variable, and tests assert exactly these so a PDF written under png is caught."""
    from analysis.render import style
    return (".png",) if style.png_only() else (".png", ".pdf")


def assert_pdf(path: Path) -> None:
    """A figure's PDF as figure_suffixes() says: a real PDF, or none written at all."""
    if ".pdf" in figure_suffixes():
        assert path.read_bytes()[:5] == b"%PDF-", path.name
    else:
        assert not path.exists(), f"{path.name} written under MEMPATH_FIGURES=png"


def analysis_cli(*args: str | Path | bytes, text: bool = True) -> subprocess.CompletedProcess:
    """``python -m analysis ARGS`` from the repo root; arguments may be bytes (non-UTF-8
    file names), and ``text=False`` keeps the output as bytes too."""
    return subprocess.run([sys.executable, "-m", "analysis", *map(os.fsencode, args)], cwd=REPO,
                          capture_output=True, text=text, timeout=300)


def _gpu_present() -> bool:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    return subprocess.run([smi, "-L"], capture_output=True).returncode == 0


HAVE_GPU = _gpu_present()

#: Names of Chromium's binary (Debian's `chromium`, Ubuntu's, Google's build); MEMPATH_CHROMIUM overrides.
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def chromium_binary() -> str | None:
    """The headless browser the `browser` tests drive, or None where none is installed."""
    if os.environ.get("MEMPATH_CHROMIUM"):
        return shutil.which(os.environ["MEMPATH_CHROMIUM"])
    return next((found for name in CHROMIUM_NAMES if (found := shutil.which(name))), None)


HAVE_CHROMIUM = chromium_binary() is not None
HAVE_SLURM_CLUSTER = os.environ.get("MEMPATH_SLURM_CLUSTER") == "1"
#: CI's own pass: the `ci` tests run (elsewhere they are deselected, and the header says so).
CI_TIER = os.environ.get("MEMPATH_CI_TESTS") == "1"


UNLIKE_HOST = os.environ.get("MEMPATH_UNLIKE_HOST") == "1"
#: The tests marked `binary`: those asking for a binary's fixture, and every test of a file
#: that reaches a binary otherwise (by its path or variable, or through the suite or the
#: vetting script, which run the build's binary).
BINARY_FIXTURES = frozenset({"mempath_bin", "mempath_cpu_bin", "mpi_bin"})
RUNS_THE_BINARY = re.compile(r"environ\[\"MEMPATH_BIN\"\]|MEMPATH_CPU_ONLY_BIN|\"build\" / \"mempath|"
                             r"run_suite\.sh\"|\"vet_node\.sh\"")
#: The host facts MEMPATH_UNLIKE_HOST sets where the caller has not set them itself.
UNLIKE_LLC = "480MiB"


def _as_an_unlike_host() -> None:
    """Makes this process (and what it starts) see a host unlike CI's: a 480 MiB cache, an
    NVML, cpufreq, one CPU. The cpufreq tree lies in a folder of its own whose proc/ and
    sys/kernel are the host's (MEMPATH_SYSFS_ROOT moves every file the conditions read)."""
    import tempfile
    fake_nvml = REPO / "build" / "tests" / "libmempath_fake_nvml.so"
    if not fake_nvml.exists():
        pytest.exit(f"MEMPATH_UNLIKE_HOST=1 needs {fake_nvml}: build the tests first (tests/run_tests.sh does)", 2)
    root = Path(tempfile.mkdtemp(prefix="mempath-unlike-host-"))
    (root / "sys").mkdir()
    (root / "proc").symlink_to("/proc")
    (root / "sys" / "kernel").symlink_to("/sys/kernel")
    for cpu in range(os.cpu_count() or 1):
        freq = root / "sys/devices/system/cpu" / f"cpu{cpu}" / "cpufreq"
        freq.mkdir(parents=True)
        for name, value in (("scaling_governor", "performance"), ("scaling_driver", "acpi-cpufreq"),
                            ("scaling_cur_freq", "3500000"), ("cpuinfo_max_freq", "3500000"),
                            ("scaling_max_freq", "3500000")):
            (freq / name).write_text(value + "\n")
    for key, value in (("MEMPATH_FAKE_LLC_BYTES", UNLIKE_LLC), ("MEMPATH_NVML_LIBRARY", str(fake_nvml)),
                       ("MEMPATH_FAKE_NVML", str(REPO / "tests/fake_nvml/readings/h200_healthy.txt")),
                       ("MEMPATH_SYSFS_ROOT", str(root))):
        os.environ.setdefault(key, value)
    # One CPU a worker, each worker its own (gw0 the first, gw1 the second, ...): every
    # process sees one CPU, and the pass still uses the machine's cores.
    cpus = sorted(os.sched_getaffinity(0))
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0")[2:] or 0)
    os.sched_setaffinity(0, {cpus[worker % len(cpus)]})


def pytest_configure(config: pytest.Config) -> None:
    if UNLIKE_HOST:
        _as_an_unlike_host()
    config.addinivalue_line("markers", "binary: runs a mempath binary (conftest.BINARY_FIXTURES, RUNS_THE_BINARY)")
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU; skipped without one")
    config.addinivalue_line("markers", "ci: builds a mempath of its own (minutes on 2 cores); run in CI's "
                            "own pass, or anywhere with MEMPATH_CI_TESTS=1")
    config.addinivalue_line("markers", "browser: opens pages in a headless Chromium; skipped without one")
    config.addinivalue_line("markers", "slurm: needs the CI Slurm cluster (slurm/ci/cluster.sh "
                            "start); skipped unless MEMPATH_SLURM_CLUSTER=1")


def pytest_report_header(config: pytest.Config) -> str:
    if UNLIKE_HOST:
        return (f"mempath: as an unlike host (MEMPATH_UNLIKE_HOST=1): a {UNLIKE_LLC} last-level cache, the fake "
                "NVML, a cpufreq tree, one CPU a worker")
    if CI_TIER:
        return "mempath: CI's tier included (MEMPATH_CI_TESTS=1): the `ci` tests run"
    return ("mempath: the `ci` tests (builds of their own: ReFrame's build fixture, the install tree, "
            "the sanitizer fuzzer) are left to CI's pass; MEMPATH_CI_TESTS=1 runs them here")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not CI_TIER:
        left = [item for item in items if item.get_closest_marker("ci")]
        if left:
            config.hook.pytest_deselected(items=left)
            items[:] = [item for item in items if not item.get_closest_marker("ci")]
    skip = pytest.mark.skip(reason="no NVIDIA GPU visible (nvidia-smi -L failed)")
    skip_slurm = pytest.mark.skip(reason="no CI Slurm cluster (slurm/ci/cluster.sh start, "
                                         "then MEMPATH_SLURM_CLUSTER=1)")
    skip_browser = pytest.mark.skip(reason="no Chromium (apt-get install chromium, or set MEMPATH_CHROMIUM)")
    sources: dict[str, bool] = {}
    for item in items:
        path = str(item.path)
        if path not in sources:
            sources[path] = bool(RUNS_THE_BINARY.search(item.path.read_text()))
        if sources[path] or BINARY_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.binary)
        if "gpu" in item.keywords and not HAVE_GPU:
            item.add_marker(skip)
        if item.get_closest_marker("browser") and not HAVE_CHROMIUM:
            item.add_marker(skip_browser)
        if item.get_closest_marker("slurm") and not HAVE_SLURM_CLUSTER:
            item.add_marker(skip_slurm)


@pytest.fixture(autouse=True)
def _one_gpu_test_at_a_time(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """GPU tests of parallel workers take turns (a lock beside the workers' temporary
    folders): two benchmarks on one GPU would measure each other."""
    if "gpu" not in request.node.keywords:
        yield
        return
    with open(tmp_path_factory.getbasetemp().parent / "mempath-gpu.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="session", autouse=True)
def _shared_root(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Where shared_render keeps what several test files make alike: the run's base
    temporary folder, which every xdist worker's own lies in (the workers share it)."""
    base = tmp_path_factory.getbasetemp()
    shared_render.set_root(base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base)


def _binary(env: str, default: Path) -> Path:
    path = Path(os.environ.get(env, default))
    if not path.exists():
        pytest.fail(f"{path} does not exist: build it first (tests/run_tests.sh does)")
    return path


@pytest.fixture(scope="session")
def mempath_bin() -> Path:
    """The default build (with CUDA where nvcc was found)."""
    return _binary("MEMPATH_BIN", REPO / "build" / "mempath")


@pytest.fixture(scope="session")
def mpi_bin() -> Path:
    """mempath-mpi (built where MPI was found)."""
    return _binary("MEMPATH_MPI_BIN", REPO / "build" / "mempath-mpi")


@pytest.fixture(scope="session")
def mempath_cpu_bin() -> Path:
    """The CPU-only build (-DMEMPATH_WITH_CUDA=OFF)."""
    return _binary("MEMPATH_CPU_ONLY_BIN", REPO / "build-cpu" / "mempath")


# ---- summary lines of a node we do not have, from a topology fixture -------------------

#: Every figure field a check reads, so one made-up line serves every family.
_FIGURES = ("median_GBps", "best_GBps", "median_ns", "median_Mops", "median_TFLOPs",
            "h2d_median_GBps", "d2h_median_GBps", "median_us", "p99_us")
#: What a plan line leaves to the run: the kernels a stream case times.
_EXPAND = {"stream": ("kernel", ("copy", "mul", "add", "triad", "dot"))}


def planned_summary_lines(binary: Path, fixture: Path, subcommand: str, *args: str) -> list[str]:
    """The summary lines a run of `mempath SUBCOMMAND ARGS` would print on the node of a
    topology fixture: its `--from` plan, every planned case `ok` with distinct made-up
    figures (so a class's minimum is a real choice), skipped cases as skipped."""
    out = run(binary, subcommand, *args, "--from", str(fixture)).stdout
    lines = []
    for line in out.splitlines():
        if not line.startswith("PLAN "):
            continue
        bench, _, rest = line[5:].partition(" ")
        fields = dict(t.split("=", 1) for t in shlex.split(rest))
        status = "ok" if fields.pop("status") == "planned" else "skipped"
        fields.pop("reason", None)
        if fields.get("size") == "sweep":   # chase: the live node's caches pick the sizes
            fields["size"] = str(1 << 30)
        key, values = _EXPAND.get(bench, ("", ("",)))
        for value in values:
            if key:
                fields[key] = value
            figure = 100 + len(lines) % 97
            tail = " ".join(f"{f}={figure}" for f in _FIGURES) if status == "ok" else ""
            body = " ".join(f"{k}={shlex.quote(v) if v else '-'}" for k, v in fields.items())
            lines.append(f"MEMPATH {bench} {body} status={status} {tail}".rstrip())
    return lines


"""Shared pytest fixtures: where the mempath binaries are, and the GPU marker.

GPU tests are marked `gpu` and skip cleanly where no NVIDIA GPU is visible; run them on
a GPU node with the same test command.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _gpu_present() -> bool:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    return subprocess.run([smi, "-L"], capture_output=True).returncode == 0


HAVE_GPU = _gpu_present()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU; skipped without one")
    config.addinivalue_line("markers", "slow: takes more than a few seconds")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip = pytest.mark.skip(reason="no NVIDIA GPU visible (nvidia-smi -L failed)")
    for item in items:
        if "gpu" in item.keywords and not HAVE_GPU:
            item.add_marker(skip)


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
def mempath_cpu_bin() -> Path:
    """The CPU-only build (-DMEMPATH_WITH_CUDA=OFF)."""
    return _binary("MEMPATH_CPU_ONLY_BIN", REPO / "build-cpu" / "mempath")

"""The aarch64 (Grace) CPU kernels, cross-compiled and run under qemu: this x86 machine
cannot run them natively, and no Grace node is at hand. Skips where the cross compiler or
qemu-aarch64 is missing (CI installs both)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CXX = shutil.which("aarch64-linux-gnu-g++")
QEMU = shutil.which("qemu-aarch64-static") or shutil.which("qemu-aarch64")


@pytest.mark.skipif(not (CXX and QEMU), reason="needs aarch64-linux-gnu-g++ and qemu-aarch64")
def test_aarch64_kernels_compute_the_right_data(tmp_path: Path) -> None:
    exe = tmp_path / "isa_selfcheck"
    subprocess.run([CXX, "-std=c++17", "-O2", "-static", f"-I{REPO / 'src'}",
                    str(REPO / "tests/cpp/isa_selfcheck.cpp"), str(REPO / "src/cpu/kernels.cpp"),
                    "-o", str(exe)], check=True)
    proc = subprocess.run([QEMU, str(exe)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("neon") == 3 and "read=0" not in proc.stdout

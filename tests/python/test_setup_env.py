"""The README's test command fails when a test fails (issue 12): site_configs/setup_env.sh
ended with `set +e` and a `cd`, which leaked into every script that sourced it, so
tests/run_tests.sh exited 0 after a failed ctest."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "MEMPATH_NO_APT": "1", "HOME": os.environ.get("HOME", str(tmp_path))}


def test_sourcing_keeps_the_callers_options_and_folder(tmp_path: Path) -> None:
    script = (f"set -euo pipefail; cd {tmp_path}; source {REPO}/site_configs/setup_env.sh; "
              "echo \"flags=$- pwd=$PWD\"; set -o | grep -E '^pipefail'")
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=600, env=_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    flags = proc.stdout.split("flags=")[1].split()[0]
    assert "e" in flags and "u" in flags
    assert f"pwd={tmp_path}" in proc.stdout
    assert "on" in proc.stdout.splitlines()[-1]


def test_run_tests_exits_non_zero_when_ctest_fails(tmp_path: Path) -> None:
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "ctest").write_text("#!/bin/sh\necho 'stub ctest: 1 test failed'\nexit 8\n")
    (stub / "ctest").chmod(0o755)
    env = _env(tmp_path)
    env["PATH"] = f"{stub}:{env['PATH']}"
    proc = subprocess.run(["bash", str(REPO / "tests" / "run_tests.sh"), "--collect-only", "-q"],
                          capture_output=True, text=True, timeout=900, env=env)
    assert "stub ctest" in proc.stdout
    assert proc.returncode == 8, proc.stdout[-2000:] + proc.stderr[-2000:]

"""The 100-run input of the report timing (docs/results/2026-11-22-applications.md): copies
of the acceptance-type result files in tests/python/data (chase, pingpong, stream, gemm, um,
allocmatrix, all from the H100 loan) and a `mempath bw --all --size 128MiB --reps 5` run of
the CI-class machine, cycled to 100 files, each with its own start_time (nightly runs).
Usage: python make_runs.py BW_RUN.h5 OUT_DIR"""
import itertools
import shutil
import sys
from pathlib import Path

import h5py

data = Path(__file__).resolve().parents[4] / "tests" / "python" / "data"
names = ("h100_chase_gpu", "h100_chase_cpu", "h100_pingpong", "h100_stream_gpu", "h100_stream_cpu", "h100_gemm",
         "h100_um", "h100_allocmatrix")
sources = [data / f"{n}.h5" for n in names] + [Path(sys.argv[1])]
out = Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
for i, src in zip(range(100), itertools.cycle(sources)):
    dst = out / f"night{i:03d}_{src.stem}.h5"
    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f:
        f.attrs["start_time"] = f"2026-{1 + i // 28:02d}-{1 + i % 28:02d}T02:00:00Z"

"""Anchor for `mempath gemm`: the same square GEMM through PyTorch (cuBLAS underneath),
timed alone with CUDA events, one call per sample, median TFLOP/s."""
import sys
import torch

def mempath_values(n, operand_b, dt):
    """mempath gemm's operands (core/gemm_model.hpp), column-major: the same data as its run."""
    i = torch.arange(n * n, device="cuda", dtype=torch.int64)
    v = ((i * 5 + 1) % 13 - 6) / 8.0 if operand_b else ((i * 7 + 3) % 17 - 8) / 8.0
    return v.to(dt).reshape(n, n).t()

def run(dtype_name, n, data, reps=10, warmup=2):
    torch.backends.cuda.matmul.allow_tf32 = dtype_name == "tf32"
    dt = {"fp16": torch.float16, "tf32": torch.float32, "fp32": torch.float32, "fp64": torch.float64}[dtype_name]
    if data == "rand":
        a = torch.rand(n, n, device="cuda", dtype=dt)
        b = torch.rand(n, n, device="cuda", dtype=dt)
    else:
        a, b = mempath_values(n, False, dt), mempath_values(n, True, dt)
    c = torch.empty(n, n, device="cuda", dtype=dt)
    for _ in range(warmup):
        torch.matmul(a, b, out=c)
    times = []
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(reps + 1)]
    ev[0].record()
    for r in range(reps):  # back to back, as mempath gemm times them
        torch.matmul(a, b, out=c); ev[r + 1].record()
    torch.cuda.synchronize()
    times = [ev[r].elapsed_time(ev[r + 1]) / 1e3 for r in range(reps)]
    times.sort()
    med = times[len(times) // 2] if reps % 2 else 0.5 * (times[reps // 2 - 1] + times[reps // 2])
    print(f"TORCH gemm data={data} dtype={dtype_name} n={n} median_TFLOPs={2 * n**3 / med / 1e12:.2f} best_TFLOPs={2 * n**3 / times[0] / 1e12:.2f} torch={torch.__version__} cublas={torch.backends.cuda.preferred_blas_library() if hasattr(torch.backends.cuda, 'preferred_blas_library') else '?'}", flush=True)

for spec in sys.argv[1:]:
    data, d, n = spec.split(":")
    run(d, int(n), data)

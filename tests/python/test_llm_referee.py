"""src/llm/referee.py without a GPU or PyTorch: its weight generator (the numpy path of the one
definition the GPU path runs too) and its prompt reproduce tests/fixtures/llm_weight_cases.txt,
the known answers the C++ (core/llm_model.hpp) is held to as well; its models are the rows of
core/llm_models.def; bad input ends in one `referee: error: WHAT; valid: WHAT` line and exit 2,
found before PyTorch is needed; and where PyTorch is missing, one line saying so, exit 2."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from src.llm import referee  # a module of the repository root, which the tests' path holds

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "src" / "llm" / "referee.py"
FIXTURE = REPO / "tests" / "fixtures" / "llm_weight_cases.txt"


def fixture_lines() -> list[list[str]]:
    return [line.split() for line in FIXTURE.read_text().splitlines() if line.strip() and not line.startswith("#")]


WEIGHTS = [f for f in fixture_lines() if f[0] != "prompt"]
PROMPTS = [f[1:] for f in fixture_lines() if f[0] == "prompt"]


def test_the_fixture_covers_what_it_says() -> None:
    assert len(WEIGHTS) >= 12 and len(PROMPTS) >= 3
    assert {int(f[1]) for f in WEIGHTS} >= {0} and {int(f[3]) for f in WEIGHTS} >= {256, 4096, 28672}
    assert {int(f[0]) for f in WEIGHTS} >= {0, 1234} and max(int(f[2]) for f in WEIGHTS) >= 2**32 - 2


@pytest.mark.parametrize("seed,tensor,index,fan_in,fp16,bf16", WEIGHTS, ids=[" ".join(f[:4]) for f in WEIGHTS])
def test_weights_reproduce_the_known_answers(seed: str, tensor: str, index: str, fan_in: str, fp16: str,
                                             bf16: str) -> None:
    values = referee.weight_values(int(seed), int(tensor), np.array([int(index)], dtype=np.int64), int(fan_in))
    assert values.dtype == np.float32
    got = {dtype: f"0x{int(referee.dtype_bits(values, dtype)[0]):04x}" for dtype in ("fp16", "bf16")}
    assert got == {"fp16": fp16, "bf16": bf16}


def test_weights_of_a_whole_range_at_once_are_the_elements_one_by_one() -> None:
    """The generator is elementwise: a chunk gives each element's own value (the GPU fills chunks)."""
    index = np.arange(2**32 - 64, 2**32, dtype=np.int64)
    together = referee.weight_values(7, 11, index, 4096)
    alone = np.concatenate([referee.weight_values(7, 11, index[i:i + 1], 4096) for i in range(len(index))])
    assert np.array_equal(together.view(np.uint32), alone.view(np.uint32))
    assert np.all(np.abs(together) <= referee.llm_scale(4096))


@pytest.mark.parametrize("seed,vocab,i,token", PROMPTS, ids=[" ".join(f) for f in PROMPTS])
def test_prompt_reproduces_the_known_answers(seed: str, vocab: str, i: str, token: str) -> None:
    model = {"vocab": int(vocab), "bos": 1}
    assert referee.prompt_tokens(model, str(int(i) + 1), int(seed))[int(i)] == int(token)
    assert referee.prompt_tokens(model, "empty", int(seed)) == [1]


def test_models_are_the_def_files_rows() -> None:
    text = (REPO / "src" / "core" / "llm_models.def").read_text()
    rows = re.findall(r'^MEMPATH_LLM_MODEL\("([^"]+)"', text, re.M)
    models = referee.load_models()
    assert list(models) == rows and "llama-2-70b" in models
    seventy = models["llama-2-70b"]
    assert seventy["tied"] is False and seventy["kv_heads"] < seventy["heads"]
    # the tensor numbers: embed 0, norm 1, an untied head 2, then nine a layer
    assert referee.tensor_number(seventy, 0, "q") == 3 and referee.tensor_number(models["tiny"], 0, "q") == 2
    assert referee.tensor_number(seventy, 79, "n2") == 3 + 9 * 79 + 8


def referee_run(*args: str, hide_torch: bool = False) -> subprocess.CompletedProcess:
    """referee.py as the C++ side starts it, with this venv's Python (`hide_torch`: as if
    PyTorch were not installed, also where it is)."""
    if hide_torch:
        code = ("import runpy, sys; sys.modules['torch'] = None; sys.argv = sys.argv[1:]; "
                "runpy.run_path(sys.argv[0], run_name='__main__')")
        cmd = [sys.executable, "-c", code, str(SCRIPT), *args]
    else:
        cmd = [sys.executable, str(SCRIPT), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


CHECK = ["check", "--model", "tiny", "--dtype", "bf16", "--seed", "1234", "--prompt-tokens", "16",
         "--tokens", "5,6,7", "--gpu", "0"]
TIME = ["time", "--way", "vllm", "--model", "tiny", "--dtype", "fp16", "--seed", "0", "--prompt-tokens", "empty",
        "--new-tokens", "16", "--reps", "3", "--warmup", "1", "--gpu", "0", "--decode-lib", "/nonexistent/a.so",
        "--placement-lib", "/nonexistent/b.so"]


def with_(args: list[str], flag: str, value: str | None) -> list[str]:
    """`args` with `flag` set to `value` (None: left out)."""
    i = args.index(flag)
    return args[:i] + args[i + 2:] if value is None else args[:i + 1] + [value] + args[i + 2:]


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, proc.stderr + proc.stdout
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("referee: error: ") and "; valid: " in lines[0], proc.stderr
    return lines[0]


@pytest.mark.parametrize("args,says", [
    (with_(CHECK, "--model", "llama-9"), r"unknown --model 'llama-9'; valid: tiny, llama-3\.2-1b, .*llama-2-70b"),
    (with_(CHECK, "--dtype", "fp32"), r"invalid --dtype 'fp32'; valid: fp16, bf16$"),
    (with_(CHECK, "--tokens", None), r"missing --tokens; valid: check .*--tokens T0,T1,\.\.\."),
    (with_(CHECK, "--tokens", "5,4096"), r"invalid --tokens '5,4096'; valid: .* 0 \.\. 4095"),
    (with_(CHECK, "--prompt-tokens", "0"), r"invalid --prompt-tokens '0'; valid: empty .* 1 \.\. 65536"),
    (with_(CHECK, "--seed", "-1"), r"invalid --seed '-1'; valid: 0 \.\. 4294967295"),
    (CHECK + ["--bogus", "1"], r"unrecognized arguments: --bogus 1; valid: check "),
    ([], r"no command; valid: check .* \| time "),
    (with_(TIME, "--way", "fast"), r"invalid --way 'fast'; valid: default .*, vllm "),
    (with_(TIME, "--new-tokens", "1"), r"invalid --new-tokens '1'; valid: 2 or more"),
    (TIME + ["--offload-layers", "3"], r"invalid --offload-layers '3'; valid: 0 \.\. 2 \(tiny's layers\)"),
    (TIME + ["--offload-layers", "1"], r"--offload-layers 1 needs --offload-to; valid: --offload-to ALLOC:MEM"),
    (TIME + ["--offload-layers", "1", "--offload-to", "pinned"], r"invalid --offload-to 'pinned'; valid: ALLOC:MEM"),
    (TIME + ["--offload-layers", "1", "--offload-to", "pinned:numa0"],
     r"--placement-lib /nonexistent/b\.so does not exist; valid: the path of libmempath_placement\.so"),
    (with_(TIME, "--way", "default"), r"--decode-lib /nonexistent/a\.so does not exist; valid: the path of "
                                      r"libmempath_decode\.so"),
])
def test_bad_input_is_one_line_naming_what_is_valid(args: list[str], says: str) -> None:
    line = one_error_line(referee_run(*args))
    assert re.search(says, line), line


@pytest.mark.parametrize("args", [CHECK, TIME], ids=["check", "time"])
def test_without_pytorch_one_line_says_it_is_needed(args: list[str]) -> None:
    line = one_error_line(referee_run(*args, hide_torch=True))
    assert re.match(rf"referee: error: PyTorch is needed for `{args[0]}` \(.*\); valid: a Python with torch", line)

"""The paper's application and latency items (Table I, Figs. 4, 11-13, 15-17, Table III):
drawn from a synthetic quad-GH200 run (tests/python/synth_apps.py) and from the real H100
and H200 files in tests/python/data, each within a journal width and the figure style,
memories named by role, managed memory under the memory its pages were found in, and each
published-vs-run value computed from the data."""
from __future__ import annotations

import math
import re
from pathlib import Path

import matplotlib.image
import numpy as np
import pandas as pd
import pytest

from analysis.figures.published import VALUES, of
from analysis.paper.write import Paper, write_paper
from analysis.render import style
from analysis.results.io import load_runs, load_table
from conftest import DATA, assert_pdf, figure_suffixes
from h5fixtures import table, topology, write_run
import synth_apps

FIGURES = ("ats_vs_managed", "latency_by_memory", "latency_by_size", "pingpong", "gemm_placement",
           "gemm_scaling", "llm_decode")
TABLES = ("gpu_characteristics", "gemm_peaks")
ITEMS = FIGURES + TABLES
REAL = [DATA / f for f in ("h100_um.h5", "h100_chase_cpu.h5", "h100_chase_gpu.h5", "h200x2_chase_peer.h5",
                           "h100_pingpong.h5", "h100_gemm.h5", "h100_llm.h5")]


class Recorder:
    """What each figure held when it was saved: its texts (titles, tick labels, legend),
    and the x, y data of every labelled line."""

    def __init__(self) -> None:
        self.texts: dict[str, list[str]] = {}
        self.lines: dict[str, dict[str, list[tuple[np.ndarray, np.ndarray]]]] = {}  # per label, panel order
        self.bars: dict[str, int] = {}    # bars drawn
        self.cells: dict[str, int] = {}   # heat-map cells with a value

    def figure_texts(self, key: str) -> list[str]:
        """The texts of a figure and its supplementary pages, each on one line."""
        return [" ".join(t.split()) for stem, texts in self.texts.items()
                if stem == key or stem.startswith(f"{key}_supplementary") for t in texts]

    def save(self, fig, out: Path, stem: str, **kwargs) -> list[Path]:
        from matplotlib.text import Text
        self.texts[stem] = [t.get_text() for t in fig.findobj(Text) if t.get_text()]
        self.lines[stem] = {}
        self.bars[stem] = sum(len(c) for ax in fig.axes for c in ax.containers)
        self.cells[stem] = sum(int(np.isfinite(np.ma.filled(im.get_array().astype(float), np.nan)).sum())
                               for ax in fig.axes for im in ax.images)
        for ax in fig.axes:
            for line in ax.lines:
                if not line.get_label().startswith("_"):
                    self.lines[stem].setdefault(line.get_label(), []).append(
                        (np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)))
        return SAVE(fig, out, stem, **kwargs)


SAVE = style.save  # the one writer every figure calls (style.save), kept before it is patched


def _paper(paths: list[Path], out: Path) -> tuple[Paper, Recorder]:
    recorder = Recorder()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(style, "save", recorder.save)  # every figure is written through style.save
        paper = write_paper(load_runs(paths), out, only=ITEMS)
    return paper, recorder


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> tuple[Paper, Recorder, list[Path]]:
    files = synth_apps.write(tmp_path_factory.mktemp("synth"), topology("gh200_quad"))
    paper, recorder = _paper(files, tmp_path_factory.mktemp("paper_synth"))
    return paper, recorder, files


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> tuple[Paper, Recorder]:
    return _paper(REAL, tmp_path_factory.mktemp("paper_real"))


def _pdf_width_in(path: Path) -> float:
    box = re.search(rb"/MediaBox\s*\[\s*0\s+0\s+([\d.]+)\s+([\d.]+)\s*\]", path.read_bytes())
    assert box, f"{path.name}: no MediaBox"
    return float(box.group(1)) / 72


def _assert_figure(paper: Paper, key: str) -> None:
    names = {p.name for p in paper.drawn[key].files}
    # every figure's numbers beside it (source data), its supplementary pages' beside them
    pages = [key, *paper.drawn[key].supplementary]
    assert names == {f"{stem}{suffix}" for stem in pages for suffix in (*figure_suffixes(), ".csv")}, \
        (key, paper.drawn[key].why_not)
    png = paper.out / f"{key}.png"
    image = matplotlib.image.imread(png)
    assert image.shape[1] <= round(style.PAGE_IN * style.DPI) + 1, f"{key}: {image.shape[1]} px wide"
    assert float(np.std(image[..., :3])) > 0.01, f"{key} is blank"
    assert_pdf(paper.out / f"{key}.pdf")
    if ".pdf" in figure_suffixes():
        assert _pdf_width_in(paper.out / f"{key}.pdf") <= style.PAGE_IN + 1e-3


# ---- every item from the synthetic quad GH200 ----

@pytest.mark.parametrize("key", FIGURES)
def test_every_figure_from_the_synthetic_quad(synthetic, key: str) -> None:
    paper, _, files = synthetic
    _assert_figure(paper, key)
    assert paper.drawn[key].runs, key
    assert set(paper.drawn[key].runs) <= {f.stem for f in files}
    assert not paper.drawn[key].why_not, (key, paper.drawn[key].why_not)   # the quad has every series


def _source(paper: Paper, key: str) -> pd.DataFrame:
    frame = pd.read_csv(paper.out / f"{key}.csv")
    assert {"panel", "series"} <= set(frame.columns) and frame["panel"].notna().all(), key
    return frame


def test_source_data_has_a_row_per_point_of_a_line_figure(synthetic) -> None:
    paper, recorder, _ = synthetic
    frame = _source(paper, "ats_vs_managed")   # Fig. 4: lines
    points = sum(len(x) for lines in recorder.lines["ats_vs_managed"].values() for x, _ in lines)
    assert len(frame) == points > 0
    assert set(frame["series"]) == set(recorder.lines["ats_vs_managed"])
    for label, lines in recorder.lines["ats_vs_managed"].items():
        mine = frame[frame["series"] == label]
        assert sorted(mine["step_ms"]) == pytest.approx(sorted(np.concatenate([y for _, y in lines])))


def test_source_data_has_a_row_per_bar_and_per_cell(synthetic) -> None:
    paper, recorder, _ = synthetic
    bars = _source(paper, "latency_by_memory")   # Fig. 11: bars
    assert len(bars) == recorder.bars["latency_by_memory"] > 0
    assert bars["latency_ns"].notna().all() and bars["memory"].notna().all()
    cells = _source(paper, "gemm_placement")     # Fig. 15: heat map
    assert len(cells) == recorder.cells["gemm_placement"] > 0
    assert {"A_in", "B_in", "TFLOPs"} <= set(cells.columns)
    pings = _source(paper, "pingpong")           # Fig. 13: heat map, each drawn cell (both ways) a row
    assert len(pings) == recorder.cells["pingpong"] > 0


@pytest.mark.parametrize("key", TABLES)
def test_every_table_from_the_synthetic_quad(synthetic, key: str) -> None:
    paper, _, _ = synthetic
    names = {p.name for p in paper.drawn[key].files}
    assert names == {f"{key}.csv", f"{key}.md"}
    assert paper.drawn[key].table[0].startswith("| ")


def test_synthetic_files_say_so_and_keep_the_schema(synthetic) -> None:
    _, _, files = synthetic
    runs = load_runs(files)
    assert all(run.attrs["synthetic"] == 1 for run in runs.runs)
    expected = {"um/cases": synth_apps.UM_CASES, "um/samples": synth_apps.UM_SAMPLES,
                "chase/cases": synth_apps.CHASE_CASES, "chase/caches": synth_apps.CHASE_CACHES,
                "pingpong/cases": synth_apps.PINGPONG_CASES, "gemm/cases": synth_apps.GEMM_CASES,
                "llm/cases": synth_apps.LLM_CASES, "llm/samples": synth_apps.LLM_SAMPLES}
    for name, columns in expected.items():
        # RunSet names every row's run in `run`, over /um/samples' own `run` (inplace run index).
        assert set(runs.table(name).columns) - {"run", "host"} == set(columns) - {"run"}, name
    # The C++ cases tables' required columns (analysis.results.schema) are all there.
    from analysis.results.schema import REQUIRED
    load_runs(files, REQUIRED)


# ---- memories by role, managed memory where its pages were ----

def test_latency_labels_memories_by_role_from_each_processor(synthetic) -> None:
    _, recorder, _ = synthetic
    texts = recorder.figure_texts("latency_by_memory")
    assert "local LPDDR (numa0)" in texts and "peer LPDDR (numa0)" in texts   # from cpu0 and from cpu1
    assert "local HBM (numa4)" in texts and "peer device memory (gpu1)" in texts
    size_texts = recorder.texts["latency_by_size"]
    assert {"L1d 64 KiB", "L2 1 MiB", "L3 114 MiB", "L1 256 KiB", "L2 50 MiB"} <= set(size_texts)
    assert {"local LPDDR", "peer HBM", "device memory"} <= set(recorder.lines["latency_by_size"])


def test_latency_by_memory_draws_the_largest_random_chain(synthetic) -> None:
    paper, recorder, files = synthetic
    cases = load_table(next(f for f in files if f.stem == "chase"), "chase/cases")
    want = cases[(cases.pu == "gpu0") & (cases.mem == "numa12") & (cases.size_bytes == 1 << 30)]["median_ns"]
    assert f"{float(want.iloc[0]):.0f}" in recorder.texts["latency_by_memory"]
    assert any("gpu0 managed asked numa0, pages on gpu0" in n for n in paper.drawn["latency_by_memory"].notes)


def test_pingpong_draws_managed_flags_where_the_page_ended(synthetic) -> None:
    paper, recorder, _ = synthetic
    titles = [t for t in recorder.figure_texts("pingpong") if t.startswith("flag: ")]
    assert "flag: device memory of gpu0, managed" in titles
    assert "flag: LPDDR of superchip 0 (numa0), numa" in titles and "flag: HBM of gpu0 (numa4), numa" in titles
    notes = " ".join(paper.drawn["pingpong"].notes)
    assert "managed flag asked on numa0, found on gpu0: 26 pairs" in notes
    assert "gpu0 device, skipped (cudaMalloc memory is not mapped for CPU access): 26 pairs" in notes


def test_gemm_draws_managed_operands_under_their_placement(synthetic) -> None:
    _, recorder, _ = synthetic
    lines = recorder.lines["gemm_scaling"]
    assert "A, B in device memory (gpu0), managed" in lines          # asked on numa0, found on gpu0
    assert not any("LPDDR (numa0), managed" in label for label in lines)
    texts = recorder.texts["gemm_placement"]
    assert {"local LPDDR (numa0)", "local HBM (numa4)", "peer HBM (numa28)"} <= set(texts)


def test_unified_memory_series_are_named_by_first_placement(synthetic) -> None:
    _, recorder, _ = synthetic
    assert set(recorder.lines["ats_vs_managed"]) == {
        "system-allocated, first on local LPDDR (numa0)", "system-allocated, first on local HBM (numa4)",
        "managed, first on local LPDDR (numa0)", "managed, first on device memory (gpu0)"}


# ---- published values against values computed from the data ----

def _comparisons(paper: Paper, key: str) -> list:
    return paper.drawn[key].comparisons


def test_table3_best_is_the_highest_median_in_the_file(synthetic) -> None:
    paper, _, files = synthetic
    cases = load_table(next(f for f in files if f.stem == "gemm"), "gemm/cases")
    found = cases[(cases.status == "ok") & (cases.c_mem == "gpu0")]
    by_dtype = {c.quantity.split("best ")[1].split(" ")[0]: c for c in _comparisons(paper, "gemm_peaks")}
    assert set(by_dtype) == {"FP16", "TF32", "FP32", "FP64"}
    for dtype, comparison in by_dtype.items():
        assert comparison.run == pytest.approx(found[found.dtype == dtype.lower()]["median_TFLOPs"].max())
        assert comparison.published == of(f"table3.{dtype.lower()}.")[0].value
        assert "Table III" in comparison.source


def test_table1_holds_the_topology_against_the_paper(synthetic) -> None:
    paper, _, _ = synthetic
    got = {c.unit: c for c in _comparisons(paper, "gpu_characteristics")}
    assert got["SMs"].run == 132 and got["SMs"].published == 132
    assert got["GB"].run == pytest.approx(102005473280 / 2**30) and got["GB"].published == 96
    assert got["MB"].run == pytest.approx(52428800 / 1e6) and "II-A3" in got["MB"].source
    text = "\n".join(paper.drawn["gpu_characteristics"].table)
    assert "1980 MHz" in text and "NVIDIA GH200 120GB" in text and "114" in text   # H100 PCIe's SMs


def test_fig4_crossover_is_read_from_the_steps(synthetic) -> None:
    paper, _, _ = synthetic
    got = _comparisons(paper, "ats_vs_managed")
    assert len(got) == 2 and all(c.published == 128 for c in got)
    # The synthetic model: managed (migrate in, 0.09 ms a memset) against LPDDR over C2C (1.07 ms a memset).
    assert {c.run for c in got} == {128.0}


def test_fig17_peaks_are_the_medians_of_the_pluggable_cases(synthetic) -> None:
    paper, _, files = synthetic
    cases = load_table(next(f for f in files if f.stem == "llm"), "llm/cases")
    got = {c.quantity: c for c in _comparisons(paper, "llm_decode")}
    assert len(got) == 4
    large = next(c for q, c in got.items() if q.startswith("Llama-2 13B") and "large" in q)
    mine = cases[(cases.model == "llama-2-13b") & (cases.torch_allocator == "pluggable")]
    assert large.run == pytest.approx(mine["peak_large_bytes"].median() / 1e9)
    assert large.published == 52 and large.unit == "GB"


def test_crossover_of_a_file_with_known_steps(tmp_path: Path) -> None:
    """System memory: 1 ms per memset; managed: 20 ms to migrate, then nothing: managed is
    faster from n = 32 on (21 ms < 32 ms; at 16, 21 > 16)."""
    samples, cases = [], []
    for case_id, (alloc, first) in enumerate((("system", "numa0"), ("managed", "gpu0"))):
        cases.append({"case_id": case_id, "experiment": "interleave", "alloc": alloc, "gpu": "gpu0", "mem": "numa0",
                      "size_bytes": 1 << 20, "status": "ok", "reason": "", "verified": 1, "first_placement": first})
        for n in (1, 2, 4, 8, 16, 32, 64):
            gpu_s = n * 1e-3 if alloc == "system" else 20e-3
            for phase in ("cpu_memset", "cpu_page_stride"):
                common = {"case_id": case_id, "experiment": "interleave", "alloc": alloc, "gpu": "gpu0",
                          "mem": "numa0", "iterations": n, "rep": 0, "first_placement": first}
                samples.append({**common, "phase": phase, "preceded_by": "gpu_memset", "time_s": 1e-3})
                samples.append({**common, "phase": "gpu_memset", "preceded_by": phase, "time_s": gpu_s,
                                "app_time_s": gpu_s + 1e-3})
    path = write_run(tmp_path / "um.h5", [], topology=topology("gh200_quad"), bw=False,
                     extra={"um/cases": table(synth_apps.UM_CASES, cases),
                            "um/samples": table(synth_apps.UM_SAMPLES, samples)})
    paper = write_paper(load_runs([path]), tmp_path / "out", only=["ats_vs_managed"])
    (got,) = paper.drawn["ats_vs_managed"].comparisons
    assert got.run == 32 and "managed, first on device memory (gpu0)" in got.quantity
    assert "system-allocated memory first placed on HBM: no case placed the buffer first on HBM (numa4)" \
        in paper.drawn["ats_vs_managed"].why_not


# ---- the real H100 / H200 files ----

@pytest.mark.parametrize("key", FIGURES)
def test_every_figure_from_the_real_files(real, key: str) -> None:
    paper, _ = real
    _assert_figure(paper, key)


def test_real_um_steps_are_cpu_phase_plus_burst(real) -> None:
    paper, recorder = real
    samples = load_table(DATA / "h100_um.h5", "um/samples")
    inter = samples[samples.experiment == "interleave"]
    cpu = inter[(inter.phase == "cpu_memset") & (inter.iterations == 1)].set_index("rep")["time_s"]
    gpu = inter[(inter.phase == "gpu_memset") & (inter.preceded_by == "cpu_memset")
                & (inter.iterations == 1)].set_index("rep")["time_s"]
    (x, y), _ = recorder.lines["ats_vs_managed"]["managed, first placement not known"]   # full, strided
    assert x[0] == 1 and y[0] == pytest.approx((cpu + gpu).median() * 1e3)
    why = paper.drawn["ats_vs_managed"].why_not
    assert "system-allocated memory first placed on host memory: skipped: GPU 0 cannot access pageable memory" in why
    assert "first placed on HBM: gpu0's memory is no NUMA node here" in why
    assert any("no app_time_s" in n for n in paper.drawn["ats_vs_managed"].notes)


def test_real_gemm_says_what_the_paper_has_and_the_file_lacks(real) -> None:
    paper, recorder = real
    assert "A and B placed apart" in paper.drawn["gemm_placement"].why_not
    assert any("4 GB" in n for n in paper.drawn["gemm_placement"].notes)
    # Managed operands of unknown placement are left out, not drawn where they were asked.
    assert not any("managed" in t for t in recorder.texts["gemm_placement"])
    assert any("unknown or mixed placement" in n for n in paper.drawn["gemm_placement"].notes)
    peaks = {c.quantity.split("best ")[1][:4]: c for c in paper.drawn["gemm_peaks"].comparisons}
    cases = load_table(DATA / "h100_gemm.h5", "gemm/cases")
    device = cases[(cases.status == "ok") & (cases.a_alloc == "device")]
    assert peaks["FP16"].run == pytest.approx(device[device.dtype == "fp16"]["median_TFLOPs"].max())
    assert "TF32, FP32 not measured" in paper.drawn["gemm_peaks"].why_not


def test_real_llm_shows_the_model_it_has_and_names_the_papers(real) -> None:
    paper, recorder = real
    why = paper.drawn["llm_decode"].why_not
    assert "Llama-2 7B and 13B in fp16 did not run (shown instead: llama-3.2-1b bf16)" in why
    assert "default-allocator baseline" in why
    assert {"local DDR (numa0), pinned", "device memory (gpu0), device"} <= set(recorder.texts["llm_decode"])
    cases = load_table(DATA / "h100_llm.h5", "llm/cases")
    hbm = cases[cases.placement == "hbm"].iloc[0]
    assert f"{hbm.median_tokens_per_s:.3g}" in recorder.texts["llm_decode"]
    # No GPU read in these files: no bound (the script's own PyTorch read is not mempath's), said.
    assert "no bound" in recorder.texts["llm_decode"]
    assert f"{hbm.bound_tokens_per_s:.3g}" not in recorder.texts["llm_decode"]
    assert any(n.startswith("No bound drawn for hbm (gpu0)") for n in paper.drawn["llm_decode"].notes)
    assert not paper.drawn["llm_decode"].comparisons     # no Llama-2 peak memory in this file


def test_real_pingpong_draws_managed_under_host_memory(real) -> None:
    paper, recorder = real
    titles = [t for t in recorder.figure_texts("pingpong") if t.startswith("flag: ")]
    assert "flag: DDR (numa0), managed" in titles
    assert not any("gpu0, managed" in t for t in titles)    # every managed flag's page ended on numa0
    assert "managed flag asked on gpu0, found on numa0" in " ".join(paper.drawn["pingpong"].notes)


def test_real_table1_compares_the_h100_with_the_papers_h100_sxm(real) -> None:
    paper, _ = real
    got = {c.unit: c for c in paper.drawn["gpu_characteristics"].comparisons}
    assert "H100 SXM" in got["SMs"].quantity and got["SMs"].ratio == 1.0
    assert got["GB"].run == pytest.approx(85017493504 / 2**30)
    assert "MB" not in got     # the paper prints its L2 for the GH200 only
    text = "\n".join(paper.drawn["gpu_characteristics"].table)
    assert "NVIDIA H200" in text       # the H200 run: shown, not compared
    assert any("none of the paper's Table I GPUs" in n for n in paper.drawn["gpu_characteristics"].notes)


def test_items_without_their_table_say_which_and_how(tmp_path: Path) -> None:
    paper = write_paper(load_runs([DATA / "h100_chase_cpu.h5"]), tmp_path, only=ITEMS)
    assert "no run holds /gemm/cases" in paper.drawn["gemm_placement"].why_not
    assert "mempath gemm" in paper.drawn["gemm_placement"].why_not
    assert "no run holds /um/samples or /um/cases" in paper.drawn["ats_vs_managed"].why_not
    assert paper.drawn["gpu_characteristics"].files      # the topology alone gives Table I


def test_published_values_name_their_source() -> None:
    keys = [p.key for p in VALUES]
    assert len(keys) == len(set(keys))
    assert all(p.source and p.unit and math.isfinite(p.value) for p in VALUES)
    assert [p.value for p in of("table3.") if p.key.count(".") == 2] == [989, 494, 67, 67]

"""The failures tests/fuzz/fuzz_attributes.py found (issue 33, "Result files"), each its
fuzzer input as a test: a valid result file whose attribute is hostile, read by the commands
that broke on it, each now refusing the file in one line that names it and says what is
wrong, the intact file beside it still processed (the fleet: the file's node failed with
the reason; docs/testing.md, "The fuzzers"), or (no words given) reading it as it is. What
each did before is in its comment."""
from __future__ import annotations

from pathlib import Path

import pytest

from h5fixtures import topology
from tests.fuzz import fuzz_attributes as fuzz  # the fuzzer, a module of the repository root

ALL = ("report", "paper", "compare", "fleet", "fleet-history")
DEEP = '{"x":' * 50_000 + "1" + "}" * 50_000

#: (base, the fuzzer's edits, the commands that broke, words of the line each gives now).
CASES = {
    # fleet, fleet-history: ValueError "invalid literal for int()" out of the command (a traceback)
    "synthetic_not_a_flag": ("corpus/pingpong.h5", [("attr", "synthetic", ("str", "0x10"))],
                             ("fleet", "fleet-history"), "root attribute synthetic holds the text '0x10'; valid: 0 or 1"),
    # fleet, fleet-history: TypeError "int() argument must be ..., not 'list'" (a traceback)
    "synthetic_an_array": ("corpus/pingpong.h5", [("attr", "synthetic", ("array2d", None))],
                           ("fleet", "fleet-history"), "root attribute synthetic holds an array of 2 values"),
    # report: section 'Scale-out' failed, paper: Fig. 14 failed (ValueError: invalid literal for int()), exit 1
    "mpi_machines_not_a_number": ("written/gh200_quad_mpi_bw.h5", [("attr", "mpi_machines", ("bytes", b"\xff\xfe"))],
                                  ("report", "paper"), "root attribute mpi_machines holds a value of type bytes"),
    # report, paper, compare: "cannot be read (Use () not None as shape arguments); the file is damaged"
    "command_line_without_a_value": ("corpus/pingpong.h5", [("attr", "command_line", ("empty", None))],
                                     ("report", "paper", "compare"),
                                     "root attribute command_line holds no value (an empty dataspace); valid: text"),
    # read as a node name with a line break: fleet-history's line naming a failed node broke in two
    "host_with_a_line_break": ("corpus/pingpong.h5", [("attr", "host", ("str", "x\ny"))], ALL,
                               "root attribute host holds the text 'x"),
    # paper: Fig. 3 failed (StyleError: the host name runs outside the figure), exit 1
    "host_longer_than_linux_allows": ("data/h100_llm.h5", [("attr", "host", ("str", "a" * 300))], ("paper",),
                                      "a host name of at most 64 characters"),
    # report, paper: KeyError 'gpu' in model/peaks.py; fleet, fleet-history: KeyError 'gpu' (tracebacks)
    "gpu_processor_without_its_number": (
        "corpus/bw.h5", [("topology", '{"processors": [{"name": "gpu0", "kind": "gpu"}]}')], ALL,
        "the topology attribute's processors[0] lacks gpu (gpu0's number, 0)"),  # issue 40: was "is null"
    # report, paper: KeyError 'pu' in model/peaks.py (a traceback)
    "path_without_its_ends": ("corpus/pingpong.h5", [("topology", '{"paths": [{}]}')], ("report", "paper"),
                              "the topology attribute's paths[0] lacks pu, mem, via"),
    # paper: Fig. 3 failed (ValueError: the truth value of an array ... is ambiguous), exit 1
    "memory_named_outside_the_rules": ("data/h100_gemm.h5", [("topo_set", ["memories", 1, "name"], "gpuX")],
                                       ("paper",), "memories[1].name 'gpuX' is not a memory name (numaN or gpuN)"),
    # report, paper, fleet, fleet-history: RecursionError (a traceback); compare: "... the file is damaged"
    "topology_nested_too_deep": ("corpus/pingpong.h5", [("topology", DEEP)], ALL,
                                 "the topology attribute nests too deep to be read"),
    # fleet-history: "night '' is not a date" for the whole append, exit 2, nothing stored
    "no_start_time": ("corpus/pingpong.h5", [("del", "start_time")], ("fleet-history", "fleet"),
                      "no start_time attribute, so no night to file it under"),
    # fleet-history: "night '20261124T0' is not a date" for the whole append, exit 2, nothing stored
    "start_time_in_iso_basic_format": ("corpus/pingpong.h5", [("attr", "start_time", ("str", "20261124T020000Z"))],
                                       ("fleet-history", "fleet"), "start_time '20261124T020000Z' is not a date and time"),
    # paper: Fig. 3 failed (ValueError: the truth value of an array ... is ambiguous: a NaN peak), exit 1
    "gpu_without_its_device_memory": ("data/h100_stream_cpu.h5", [("topo_del", ["memories", 1])], ("paper",),
                                      "processors list gpu0 but its memories no gpu0 (its device memory)"),
    # paper: Fig. 3 failed as above, exit 1
    "path_missing_for_a_pair": ("data/h100_allocmatrix.h5", [("topo_del", ["paths", 3])], ("paper",),
                                "paths lack the one from gpu0 to gpu0"),
    # report: section 'Transfers and placement' failed (AttributeError: 'float' object has no
    # attribute 'startswith' in model/pathtable.py: no peak, NaN), exit 1
    "processors_without_memories": ("written/gh200_quad_bw_memcpy.h5", [("topo_del", ["memories"])], ("report",),
                                    "processors (cpu0, cpu1, cpu2) come with no memories"),
    # paper: Fig. 9 failed (StyleError: 36.60 in tall: taller than a page), exit 1
    "processors_listed_again_and_again": ("written/gh200_quad_bw_memcpy.h5",
                                          [("topo_set", ["processors"], topology("gh200_quad")["processors"] * 50)],
                                          ("paper",), "processors list cpu0 twice"),
    # report: UnicodeEncodeError out of the command (a traceback) writing the topology's text;
    # read now, the escape \udcff (a lone surrogate, no character) kept as its six characters
    "topology_text_with_a_lone_surrogate": ("data/h100_llm.h5", [("topo_set", ["cpu_model"], "\udcff")],
                                            ("report",), ""),
    # paper: "Theoretical peak of every path" failed (UnicodeEncodeError), exit 1
    "topology_path_with_a_lone_surrogate": ("data/h100_stream_gpu.h5", [("topo_set", ["paths", 0, "via"], "\udcff")],
                                            ("paper",), ""),
    # fleet: StyleError out of the command (a traceback): the heatmap's node names pushed its label out
    "host_name_of_a_cloud_vm": ("corpus/simulated_x86_h100.h5", [("attr", "host", ("str", fuzz.LONG_HOST))],
                                ("fleet",), ""),
}


@pytest.fixture(autouse=True)
def _figures_checked_not_written(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fuzz.outfiles, "save_figure", fuzz._no_figure_file)


@pytest.mark.parametrize("name", list(CASES))
def test_a_hostile_attribute_is_one_line_naming_the_file(tmp_path: Path, name: str) -> None:
    base, edits, broke, words = CASES[name]
    original = fuzz.base_file(base, tmp_path)
    source = tmp_path / "input.h5"
    fuzz.write_input(original, source, edits)
    fuzzed = fuzz.lay_out(tmp_path, source, original)
    for command, argv in fuzz.commands(tmp_path, fuzzed):
        if command not in broke:
            continue
        outcome = fuzz._judge(command, *fuzz._call(argv), fuzzed)
        if command == "fleet" and outcome[1] != "failed":
            outcome = fuzz._fleet_node(tmp_path, fuzzed, outcome)
        assert outcome[1] == ("refused" if words else "ok"), outcome
        assert words in outcome[2], outcome
        if "root attribute host" in words:
            assert "valid: a host name of" in outcome[2], outcome
    if "fleet-history" in broke and not fuzz.HAVE_DUCKDB:
        pytest.skip("duckdb is not installed: fleet-history was not run")

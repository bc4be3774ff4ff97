"""NVLink and unknown-HBM peaks (issue #12, GH200 fidelity): NVLink per GPU pair is links
per pair x 25 GB/s (NVLink 4), not the 18 links of a whole GPU; HBM recognised without GPU
facts gets no invented peak."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from analysis.model.peaks import PeakModel, nvlink_pair
from conftest import run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def fixture_topology(binary: Path, name: str, tmp_path: Path, gpus: bool = True) -> dict[str, Any]:
    """`mempath topo --from tests/fixtures/NAME --json`, without gpus.txt if asked."""
    snap = FIXTURES / name
    if not gpus:
        snap = tmp_path / name
        shutil.copytree(FIXTURES / name, snap)
        (snap / "gpus.txt").unlink()
    return json.loads(run(binary, "topo", "--from", str(snap), "--json").stdout)


def hgx(model: str, count: int) -> dict[str, Any]:
    """A node of `count` fully NVLink-connected GPUs of `model` (only what the model reads)."""
    gpus = [{"name": f"gpu{g}", "kind": "gpu", "gpu": g, "model": model,
             "nvlink_peers": [h for h in range(count) if h != g]} for g in range(count)]
    mems = [{"name": f"gpu{g}", "kind": "device", "gpu": g} for g in range(count)]
    paths = [{"pu": f"gpu{g}", "mem": f"gpu{h}", "via": "nvlink"}
             for g in range(count) for h in range(count) if g != h]
    return {"cpu_model": "x86", "processors": gpus, "memories": mems, "paths": paths}


def test_quad_gh200_pair_has_6_links_150_gbps(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    # Was 450 (all 18 links of a GPU) before the fix.
    model = PeakModel(fixture_topology(mempath_cpu_bin, "gh200_quad", tmp_path))
    peak = model.path("gpu0", "gpu1")
    assert (peak.gbps, peak.limit) == (150.0, "link:nvlink:gpu0")
    assert model.path("gpu0", "numa12").gbps == 150.0  # the peer's HBM node, same links


def test_quad_gh200_that_lost_a_gpu_keeps_6_links_per_pair(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    # #33: the driver fenced one GPU; three are left, renumbered gpu0..gpu2. Was 225 (18
    # links over the 2 peers left): the fenced GPU's links do not move to the survivors.
    quad = PeakModel(fixture_topology(mempath_cpu_bin, "gh200_quad", tmp_path))
    fenced = PeakModel(fixture_topology(mempath_cpu_bin, "gh200_quad_gpu_fenced", tmp_path))
    assert sorted(fenced.gpus) == [0, 1, 2] and fenced.sockets == 4
    for a, b in ((0, 1), (0, 2), (1, 2), (2, 0)):
        peak = fenced.path(f"gpu{a}", f"gpu{b}")
        assert (peak.gbps, peak.limit) == (150.0, f"link:nvlink:gpu{a}")
        assert peak.citation == quad.path("gpu0", "gpu1").citation and not peak.assumed
    assert fenced.path("gpu2", "numa12").gbps == quad.path("gpu3", "numa12").gbps == 150.0
    # gpu2 is superchip 3's GPU: to the LPDDR of the Grace whose GPU is gone, over its own
    # C2C, then the Grace interconnect (75, the quad's: four Graces are still there).
    assert fenced.vias[("gpu2", "numa2")] == "c2c+interconnect"
    assert fenced.path("gpu2", "numa2").gbps == 75.0


def test_nvswitch_hgx_pair_gets_all_18_links() -> None:
    for model_name in ("NVIDIA H100 80GB HBM3", "NVIDIA H200"):
        assert PeakModel(hgx(model_name, 8)).path("gpu0", "gpu5").gbps == 450.0


def test_nvlink_bridges_of_pcie_cards_carry_300() -> None:
    assert PeakModel(hgx("NVIDIA H100 NVL", 2)).path("gpu0", "gpu1").gbps == 300.0
    assert PeakModel(hgx("NVIDIA H100 PCIe", 2)).path("gpu0", "gpu1").gbps == 300.0


@pytest.mark.parametrize(("model", "peers", "links", "gbps", "says"), [
    ("NVIDIA GH200 120GB", 3, 6, 150.0, "18 links over 3 peers"),
    ("NVIDIA GH200 480GB", 1, 18, 450.0, "18 links over 1 peers"),
    ("NVIDIA H100 80GB HBM3", 3, 18, 450.0, "assumed NVSwitch"),
    ("NVIDIA GH200 120GB", 0, 18, 450.0, "assumed NVSwitch"),
    ("NVIDIA GH200 120GB", 2, 9, 225.0, "18 links over 2 peers"),  # a board of three
    ("Tesla T4", 1, None, None, "unknown"),
])
def test_nvlink_pair_states_its_assumption(model: str, peers: int, links: int | None,
                                            gbps: float | None, says: str) -> None:
    pair = nvlink_pair(model, peers)
    assert (pair.links, pair.gbps) == (links, gbps)
    assert says in pair.assumption


@pytest.mark.parametrize(("peers", "superchips"), [(3, 4), (2, 4), (1, 4), (3, None)])
def test_gh200_pair_links_come_from_the_board_not_the_visible_peers(peers: int, superchips: int | None) -> None:
    pair = nvlink_pair("NVIDIA GH200 120GB", peers, superchips)
    assert (pair.links, pair.gbps) == (6, 150.0)
    assert "18 links over 3 peers" in pair.assumption and not pair.citation.startswith("assumed")


def test_gh200_hbm_without_gpu_facts_has_no_invented_peak(mempath_cpu_bin: Path, tmp_path: Path) -> None:
    # Was host memory behind a 150 GB/s socket link on a one-socket node.
    topo = fixture_topology(mempath_cpu_bin, "gh200_single", tmp_path, gpus=False)
    hbm = next(m for m in topo["memories"] if m["name"] == "numa1")
    assert (hbm["kind"], hbm["gpu"]) == ("hbm", None)
    peak = PeakModel(topo).path("cpu0", "numa1")
    assert peak.gbps is None and set(peak.unknown) == {"link:unknown", "numa1"}

"""Causes: what the recorded conditions of a case show about its figure (issue 40).

A cause is a rule of RULES that fired on a case's window (analysis/results/conditions.py:
the readings before and after it, for the GPUs and CPU nodes it used), said with the
readings it rests on: "PCIe link of gpu2 trained at x8 of x16", "power cap held the clocks of
gpu0 during 92 % of the case (699 W of its 700 W limit)". The words hold no quote or
apostrophe: they go into drain.txt's Slurm reasons as they are. Every rule, its threshold and
where that comes from is in RULES, here and only here; the node report, `analysis compare`
and `analysis fleet` all ask ``case_causes`` and ``node_conditions``.

Nothing is guessed: a case without recorded conditions gets None (the readers then say
nothing), a value NVML did not give never fires a rule, and a case whose conditions fire
no rule is NOTHING, "nothing in the recorded conditions explains it", where a reader says
anything at all (a path below EXPECTED_SHARE of its peak, a regression, a degraded node).

A rule with ``drain`` marks a condition that takes a node out on its own, whatever its
figures (a link trained below its maximum, memory awaiting repair): ``node_conditions``
finds them over every reading of a run, and `analysis fleet` counts them apart from the
bandwidth verdicts (docs/fleet.md).
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..results.conditions import Conditions, Window

#: Below this share of its theoretical peak a path is slower than a healthy node gives: the
#: healthy H200 paths of docs/results/2026-11-22-h200x2-report reached 82-91 % (HBM read
#: 4,361 GB/s = 91 %, gpu0 read of numa0 over PCIe gen5 x16 51 GB/s = 82 %, NVLink 83 %).
EXPECTED_SHARE = 0.70
#: A clock limit (power, thermal, board, reliability) counts where it held the clocks
#: during at least this share of a case's window: less cannot move a bandwidth figure by
#: more than the run-to-run noise of the H100/H200 GPU paths (0.2-2 %, docs/fleet.md noise model)
#: would have had to hide.
HELD_SHARE = 0.10
#: The driver advances the violation times in steps of about 100 ms (assumed from
#: observation in public NVML telemetry code: "the driver advances these counters in 100 ms
#: steps"; the device runs check it): over a window shorter than this one step could pass
#: for a tenth of it, so a shorter window says nothing of a limit's share.
HELD_MIN_S = 1.0
#: Other processes' share of the cores a CPU case ran on, and the hypervisor's (steal),
#: from which they count: a case whose cores were a tenth busy with other work loses about
#: that much of a core-bound figure; steal is rarer and named from 5 %.
BUSY_SHARE, STEAL_SHARE = 0.10, 0.05
#: /proc/stat counts in ticks (10 ms): a window shorter than this says nothing of shares.
BUSY_MIN_S = 0.2
#: NVLink errors that count: any replay or recovery (the link resent or retrained), or CRC
#: errors from this many on (a few can appear on a healthy link; replays follow many).
NVLINK_CRC_MIN = 100
#: cpufreq drivers whose "powersave" governor is a hint to their own frequency selection
#: (they still reach full frequency under load): only other drivers' powersave pins the lowest.
ACTIVE_DRIVERS = ("intel_pstate", "amd-pstate-epp", "amd-pstate")
#: A CPU node whose scaling_max_freq is below this share of cpuinfo_max_freq was capped.
FREQ_CAP_SHARE = 0.90
#: Families whose cases run a GPU at its power limit by design: a dense GEMM at the default
#: limit is held by the power cap (the lent H200, fp16 n = 16,384 and 32,768: 67 % of its
#: 1.8 s at 657 W of 700 W, docs/results/2026-11-29-conditions.md), so there the power cap
#: is a cause only where the limit was lowered below its default.
POWER_BOUND = ("gemm",)
#: Said where a case has conditions and no rule fired, wherever a reader asks why.
NOTHING = "nothing in the recorded conditions explains it"

#: nvmlClocksEventReason bits (nvml.h): what held the clocks at a reading.
HW_SLOWDOWN, SW_POWER_CAP, SW_THERMAL, HW_THERMAL, HW_POWER_BRAKE = 0x8, 0x4, 0x20, 0x40, 0x80
REASON_NAMES = {0x1: "idle", 0x2: "application clocks setting", SW_POWER_CAP: "SW power cap",
                HW_SLOWDOWN: "HW slowdown", 0x10: "sync boost", SW_THERMAL: "SW thermal slowdown",
                HW_THERMAL: "HW thermal slowdown", HW_POWER_BRAKE: "HW power brake slowdown",
                0x100: "display clock setting"}


class Cause(NamedTuple):
    rule: str     # the RULES key
    part: str     # the GPU or CPU node it concerns: "gpu2", "cpu0"
    text: str     # the evidence in words
    drain: bool


@dataclass
class GpuSide:
    """What a GPU rule reads: the GPU's facts, its readings at the window's ends, the window."""

    gpu: int
    facts: dict[str, Any]
    start: dict[str, Any]
    end: dict[str, Any] | None
    seconds: float
    cases: int
    others: tuple[dict[str, Any], ...] = ()  # further readings a run-wide check reads too
    family: str = ""                         # the case's family, where the reader knows it

    @property
    def name(self) -> str:
        return f"gpu{self.gpu}"

    def ends(self) -> list[dict[str, Any]]:
        return [r for r in (self.start, self.end, *self.others) if r]

    def grew(self, column: str) -> float:
        """The counter's growth over the window; NaN where a reading lacks it."""
        if not self.end:
            return math.nan
        a, b = self.start.get(column), self.end.get(column)
        if not _known(a) or not _known(b):
            return math.nan
        return float(b) - float(a)

    def held(self, column: str) -> float:
        """The share of the window during which the policy of ``column`` held the clocks; NaN
        where it is unknown, 0 where the window is too short to say (HELD_MIN_S)."""
        grew = self.grew(column)
        if not math.isfinite(grew) or not self.seconds > 0:
            return math.nan
        return grew / self.seconds if self.seconds >= HELD_MIN_S else 0.0

    def during(self) -> str:
        return "the case" if self.cases == 1 else f"the {self.seconds:.2g} s its {self.cases} cases shared"


@dataclass
class HostSide:
    """What a host rule reads: a CPU node's facts and readings, the process's own CPU time."""

    numa: int
    facts: dict[str, Any]    # host_conditions' cpu_nodes entry
    driver: str
    start: dict[str, Any]
    end: dict[str, Any] | None
    self_cpu_s: float        # the process's CPU seconds over the window (on any node)
    load1: float
    seconds: float
    cases: int

    @property
    def name(self) -> str:
        return f"cpu{self.numa}"

    def delta(self, column: str) -> float:
        if not self.end or not _known(self.start.get(column)) or not _known(self.end.get(column)):
            return math.nan
        return float(self.end[column]) - float(self.start[column])


def _known(value: Any) -> bool:
    return isinstance(value, (int, float)) and not (isinstance(value, float) and math.isnan(value)) and value >= 0


def _pct(share: float) -> str:
    return f"{min(share, 1.0) * 100:.0f} %"


# ---- the rules -------------------------------------------------------------------------
# Each test reads one GPU's or one CPU node's side and returns the evidence in words where
# the rule fires, else None.

def _pcie_width(g: GpuSide) -> str | None:
    widest, most = max((r["pcie_width"] for r in g.ends()), default=-1), g.facts.get("pcie_max_width")
    if _known(most) and 0 < widest < most:
        return f"PCIe link of {g.name} trained at x{widest} of x{most}"
    return None


def _pcie_gen(g: GpuSide) -> str | None:
    # The link's speed drops with the GPU's performance state: only P0 readings count.
    p0 = [r["pcie_gen"] for r in g.ends() if r["pstate"] == 0 and r["pcie_gen"] > 0]
    most = g.facts.get("pcie_max_gen")
    if p0 and _known(most) and max(p0) < most:
        return f"PCIe link of {g.name} at gen {max(p0)} of gen {most} while in P0"
    return None


def _limit(g: GpuSide) -> str:
    limit, default = g.end.get("power_limit_w") if g.end else math.nan, g.facts.get("default_power_limit_w")
    if not _known(limit):
        return ""
    power = max((r["power_w"] for r in g.ends() if _known(r["power_w"])), default=math.nan)
    said = f"{power:,.0f} W of its {limit:,.0f} W limit" if _known(power) else f"limit {limit:,.0f} W"
    if _known(default) and limit < 0.99 * default:
        said += f", lowered from its default {default:,.0f} W"
    return f" ({said})"


def _reasons_at(g: GpuSide, bits: int) -> list[str]:
    """The reasons of ``bits`` active at either end of the window, by name."""
    active = 0
    for r in g.ends():
        if _known(r["event_reasons"]):
            active |= int(r["event_reasons"]) & bits
    return [name for bit, name in REASON_NAMES.items() if active & bit]


def _lowered(g: GpuSide) -> bool:
    limit, default = (g.end or g.start).get("power_limit_w"), g.facts.get("default_power_limit_w")
    return _known(limit) and _known(default) and limit < 0.99 * default


def _power_cap(g: GpuSide) -> str | None:
    if g.family in POWER_BOUND and not _lowered(g):
        return None
    share = g.held("power_capped_s")
    if math.isfinite(share):
        if share >= HELD_SHARE:
            return f"power cap held the clocks of {g.name} during {_pct(share)} of {g.during()}{_limit(g)}"
        return None
    if _reasons_at(g, SW_POWER_CAP):  # no violation counter: the reason itself at the window's ends
        return f"power cap active on {g.name} at an end of the case{_limit(g)}"
    return None


def _thermal(g: GpuSide) -> str | None:
    share = g.held("thermal_s")
    hottest = max((r["temperature_c"] for r in g.ends() if _known(r["temperature_c"])), default=None)
    heat = f" ({hottest} C)" if hottest is not None else ""
    if math.isfinite(share):
        if share < HELD_SHARE:
            return None
        return f"thermal slowdown of {g.name} during {_pct(share)} of {g.during()}{heat}"
    if _reasons_at(g, SW_THERMAL | HW_THERMAL):
        return f"thermal slowdown of {g.name} at an end of the case{heat}"
    return None


def _hw_slowdown(g: GpuSide) -> str | None:
    named = _reasons_at(g, HW_SLOWDOWN | HW_POWER_BRAKE)
    shares = {what: g.held(column) for what, column in (("board limit", "board_limit_s"),
                                                        ("reliability limit", "reliability_s"))}
    held = [f"{what} during {_pct(s)} of {g.during()}" for what, s in shares.items()
            if math.isfinite(s) and s >= HELD_SHARE]
    if not named and not held:
        return None
    return f"clocks of {g.name} held by " + ", ".join([*(f"{n} (active at an end of the case)" for n in named), *held])


def _app_clocks(g: GpuSide) -> str | None:
    said = []
    for what, column, default in (("SM", "app_sm_clock_mhz", "default_app_sm_clock_mhz"),
                                  ("memory", "app_mem_clock_mhz", "default_app_mem_clock_mhz")):
        value, normal = g.facts.get(column), g.facts.get(default)
        if _known(value) and _known(normal) and 0 < value < normal:
            said.append(f"{what} {value:,} of its default {normal:,} MHz")
    return f"application clocks of {g.name} set to " + ", ".join(said) if said else None


def _nvlink_down(g: GpuSide) -> str | None:
    down = next((r["nvlink_down"] for r in reversed(g.ends()) if r["nvlink_down"]), "")
    if not down:
        return None
    present = len(g.facts.get("nvlinks") or [])
    count = len(down.split(","))
    of = f" ({present - count} of {present} active)" if present >= count else ""
    return f"NVLink {down} of {g.name} down{of}"


def _nvlink_errors(g: GpuSide) -> str | None:
    crc, replay, recovery = (g.grew(c) for c in ("nvlink_crc", "nvlink_replay", "nvlink_recovery"))
    counts = [(n, w) for n, w in ((crc, "CRC errors"), (replay, "replays"), (recovery, "recoveries"))
              if math.isfinite(n) and n > 0]
    if not counts or not ((math.isfinite(replay) and replay > 0) or (math.isfinite(recovery) and recovery > 0)
                          or (math.isfinite(crc) and crc >= NVLINK_CRC_MIN)):
        return None
    return f"NVLink errors of {g.name} grew during {g.during()}: " + ", ".join(f"{n:,.0f} {w}" for n, w in counts)


def _ecc(g: GpuSide) -> str | None:
    grew = g.grew("ecc_uncorrected")
    if math.isfinite(grew) and grew > 0:
        return f"{grew:,.0f} uncorrectable ECC error{'s' if grew != 1 else ''} on {g.name} during {g.during()}"
    return None


def _repair(g: GpuSide) -> str | None:
    last = g.end or g.start
    if last["remap_failure"] == 1:
        return f"row remapping of {g.name} failed (its memory cannot be repaired in place)"
    pending = [w for c, w in (("remap_pending", "a row remap"), ("retirement_pending", "a page retirement"))
               if last[c] == 1]
    if pending:
        return f"{g.name} has {' and '.join(pending)} pending (until the GPU is reset)"
    return None


def _mig(g: GpuSide) -> str | None:
    if g.facts.get("mig") != 1:
        return None
    return f"MIG mode on {g.name}: the case ran on a MIG instance, a part of the GPU"


def _governor(h: HostSide) -> str | None:
    governor = str((h.end or h.start).get("governor") or "")
    if governor in ("powersave", "userspace") and h.driver and h.driver not in ACTIVE_DRIVERS:
        freq = (h.end or h.start).get("freq_mhz")
        at = f", {freq:,.0f} MHz" if _known(freq) else ""
        return f"governor {governor} on {h.name} ({h.driver}: not its highest frequency{at})"
    return None


def _frequency_cap(h: HostSide) -> str | None:
    most, top = h.facts.get("max_mhz"), h.facts.get("cpuinfo_max_mhz")
    if _known(most) and _known(top) and top > 0 and most < FREQ_CAP_SHARE * top:
        return f"frequency of {h.name} capped at {most:,.0f} of {top:,.0f} MHz (scaling_max_freq)"
    return None


def _busy(h: HostSide) -> str | None:
    busy, cpus = h.delta("busy_s"), (h.end or h.start).get("cpus")
    if not (math.isfinite(busy) and _known(cpus) and cpus > 0 and h.seconds >= BUSY_MIN_S):
        return None
    own = h.self_cpu_s if math.isfinite(h.self_cpu_s) else 0.0
    others = max(busy - own, 0.0) / (cpus * h.seconds)
    if others < BUSY_SHARE:
        return None
    load = f", load average {h.load1:.1f}" if math.isfinite(h.load1) else ""
    return f"other processes used {_pct(others)} of the {cpus} cores of {h.name} during {_during(h)}{load}"


def _steal(h: HostSide) -> str | None:
    steal, cpus = h.delta("steal_s"), (h.end or h.start).get("cpus")
    if not (math.isfinite(steal) and _known(cpus) and cpus > 0 and h.seconds >= BUSY_MIN_S):
        return None
    share = steal / (cpus * h.seconds)
    if share < STEAL_SHARE:
        return None
    return f"the hypervisor took {_pct(share)} of the cores of {h.name} (steal) during {_during(h)}"


def _during(h: HostSide) -> str:
    return "the case" if h.cases == 1 else f"the {h.seconds:.2g} s its {h.cases} cases shared"


class Rule(NamedTuple):
    key: str
    scope: str      # "gpu" (a GPU's side) or "cpu" (a CPU node's side)
    cases: str      # which cases it concerns: "gpu" (using the GPU), "pcie" / "nvlink" (crossing
                    # that link of the GPU), "cpu" (running on the node's cores)
    test: Callable[[Any], str | None]
    drain: bool     # takes the node out on its own (node_conditions)
    source: str     # why, and where the threshold comes from
    span: str = ""  # a drain rule's reading of a whole run: "each" reading alone, the "last"
                    # one, the "run" (first to last), or "all" readings at once


#: Every rule, in the order its causes are said. docs/analysis.md ("Causes") lists them.
RULES: tuple[Rule, ...] = (
    Rule("pcie_width", "gpu", "pcie", _pcie_width, True,
         "NVML current PCIe width below the maximum the GPU and its slot allow (nvmlDeviceGetMaxPcieLinkWidth): "
         "the link's bandwidth scales with its lanes", span="each"),
    Rule("pcie_gen", "gpu", "pcie", _pcie_gen, True,
         "NVML current PCIe generation below the maximum, in P0 only (the link slows down in lower "
         "performance states by design)", span="all"),
    Rule("nvlink_down", "gpu", "nvlink", _nvlink_down, True,
         "a present NVLink (one NVML gives a state for) not active: NVLink traffic shares the others", span="each"),
    Rule("nvlink_errors", "gpu", "nvlink", _nvlink_errors, False,
         f"NVLink replay or recovery counters grew, or CRC errors by {NVLINK_CRC_MIN} or more, over the window: "
         "resent or retrained traffic"),
    Rule("power_cap", "gpu", "gpu", _power_cap, False,
         f"NVML power violation time (NVML_FI_DEV_PERF_POLICY_POWER) grew by {HELD_SHARE:.0%} or more of a window "
         f"of {HELD_MIN_S:g} s or more; where it is not given, the SW power cap reason at either end; for a "
         f"family that runs at the power limit by design ({', '.join(POWER_BOUND)}) only below the default limit"),
    Rule("thermal", "gpu", "gpu", _thermal, False,
         f"NVML thermal violation time grew by {HELD_SHARE:.0%} or more of a window of {HELD_MIN_S:g} s or more; "
         "where it is not given, a thermal slowdown reason at either end"),
    Rule("hw_slowdown", "gpu", "gpu", _hw_slowdown, False,
         f"HW slowdown or power brake reason at either end, or board or reliability violation time of "
         f"{HELD_SHARE:.0%} or more"),
    Rule("app_clocks", "gpu", "gpu", _app_clocks, False,
         "application clocks at the run's start below the GPU's default application clocks (someone set them: "
         "nvidia-smi -ac)"),
    Rule("mig", "gpu", "gpu", _mig, False, "MIG mode on at the run's start: CUDA ran on a slice of the GPU"),
    Rule("ecc_uncorrected", "gpu", "gpu", _ecc, True,
         "volatile uncorrectable ECC errors grew over the window", span="run"),
    Rule("memory_repair", "gpu", "gpu", _repair, True,
         "a row remap or page retirement pending, or row remapping failed, at the window's end: the GPU needs "
         "a reset (or service) before its memory is whole", span="last"),
    Rule("governor", "cpu", "cpu", _governor, False,
         f"CPU frequency governor powersave or userspace under a cpufreq driver other than {', '.join(ACTIVE_DRIVERS)} "
         "(whose powersave still reaches full frequency)"),
    Rule("frequency_cap", "cpu", "cpu", _frequency_cap, False,
         f"scaling_max_freq below {FREQ_CAP_SHARE:.0%} of cpuinfo_max_freq at the run's start"),
    Rule("busy", "cpu", "cpu", _busy, False,
         f"the node's busy time less this process's own CPU time, {BUSY_SHARE:.0%} or more of its cores over a "
         f"window of {BUSY_MIN_S} s or more (/proc/stat)"),
    Rule("steal", "cpu", "cpu", _steal, False,
         f"steal time {STEAL_SHARE:.0%} or more of the node's cores over a window of {BUSY_MIN_S} s or more"),
)


def _gpu_side(cond: Conditions, gpu: int, window: Window, family: str = "") -> GpuSide | None:
    start = cond.gpus.get((window.start, gpu))
    if start is None:
        return None
    return GpuSide(gpu, cond.gpu_facts.get(gpu, {}), start, cond.gpus.get((window.end, gpu)),
                   cond.seconds(window), window.cases, family=family)


def _host_side(cond: Conditions, numa: int, window: Window) -> HostSide | None:
    start = cond.cpus.get((window.start, numa))
    if start is None:
        return None
    nodes = {n.get("numa"): n for n in cond.host.get("cpu_nodes", []) if isinstance(n, dict)}
    a, b = cond.readings.get(window.start, {}), cond.readings.get(window.end, {})
    own = b["self_cpu_s"] - a["self_cpu_s"] if a and b else math.nan
    return HostSide(numa, nodes.get(numa, {}), str(cond.host.get("cpufreq_driver") or ""), start,
                    cond.cpus.get((window.end, numa)), own, float(b.get("load1", math.nan)) if b else math.nan,
                    cond.seconds(window), window.cases)


def _concerns(rule: Rule, window: Window) -> bool:
    via = set(window.via.split("+")) if window.via else set()
    if rule.cases == "pcie":
        return bool(via & {"pcie", "peer"}) or not via  # an unknown path: any link it may cross
    if rule.cases == "nvlink":
        return "nvlink" in via or not via
    return True


def case_causes(cond: Conditions | None, case_id: int, family: str = "") -> list[Cause] | None:
    """The causes the case's window shows, [] where none fired; None where the file recorded
    no conditions for it (then nothing is said). ``family``: the case's (POWER_BOUND)."""
    if cond is None or case_id not in cond.windows:
        return None
    window = cond.windows[case_id]
    found: list[Cause] = []
    gpus = [s for s in (_gpu_side(cond, g, window, family) for g in cond.gpus_of(window)) if s]
    hosts = [s for s in (_host_side(cond, n, window) for n in cond.cpu_nodes_of(window)) if s]
    for rule in RULES:
        if not _concerns(rule, window):
            continue
        for side in gpus if rule.scope == "gpu" else hosts:
            text = rule.test(side)
            if text:
                found.append(Cause(rule.key, side.name, text, rule.drain))
    return found


def node_conditions(cond: Conditions | None) -> list[Cause]:
    """The drain rules that fire anywhere in a run, once per GPU and rule: each GPU's first
    and last readings as one window (its counters' growth over the run), and each of its
    readings alone (a state: a link down, a width, a pending repair)."""
    if cond is None:
        return []
    found: list[Cause] = []
    for gpu in sorted({g for _, g in cond.gpus}):
        read = [cond.gpus[(r, gpu)] for r in sorted(cond.readings) if (r, gpu) in cond.gpus]
        if not read:
            continue
        facts = cond.gpu_facts.get(gpu, {})
        spans = {"each": [GpuSide(gpu, facts, r, None, math.nan, 1) for r in read],
                 "last": [GpuSide(gpu, facts, read[-1], None, math.nan, 1)],
                 "run": [GpuSide(gpu, facts, read[0], read[-1], math.nan, 1)],
                 "all": [GpuSide(gpu, facts, read[0], read[-1], math.nan, 1, tuple(read[1:-1]))]}
        for rule in RULES:
            if not rule.drain or rule.scope != "gpu":
                continue
            text = next(filter(None, (rule.test(side) for side in spans[rule.span])), None)
            if text:
                found.append(Cause(rule.key, f"gpu{gpu}", text.replace("during the case", "during the run"), True))
    return found


def words(causes: Iterable[Cause] | None) -> str:
    """The causes in words ("; " between them), NOTHING where none fired, "" where the case
    has no conditions."""
    if causes is None:
        return ""
    texts = list(dict.fromkeys(c.text for c in causes))
    return "; ".join(texts) if texts else NOTHING


def reason_names(bits: int) -> list[str]:
    """The names of the clock event reasons of ``bits`` (nvmlClocksEventReason*)."""
    return [name for bit, name in REASON_NAMES.items() if bits >= 0 and bits & bit]


_NO_LIBRARY = re.compile(r"NVML not available: (?P<path>\S+?): cannot open shared object file")
_NVML = re.compile(r"NVML (?P<nvml>[^,]+), driver (?P<driver>[^ ]+) \(")


def nvml_words(nvml: str) -> str:
    """What a run's ``nvml`` attribute (the recorder's raw text: core/conditions.cpp) means
    for its GPU conditions, in words: the loader's or NVML's own error stays in the file."""
    if m := _NVML.match(nvml):
        return f"GPU conditions read through NVML {m['nvml']} (NVIDIA driver {m['driver']})"
    if m := _NO_LIBRARY.match(nvml):
        if m["path"] == "libnvidia-ml.so.1":
            return "no NVIDIA driver on this node: GPU conditions not read"
        return f"no NVML library at {m['path']} (MEMPATH_NVML_LIBRARY): GPU conditions not read"
    if nvml.startswith("NVML not available: nvmlInit"):
        return f"NVIDIA's driver did not start NVML ({nvml.split(': ', 2)[-1]}): GPU conditions not read"
    if nvml.startswith("NVML not available"):
        return "NVML could not be used (the run's file says why): GPU conditions not read"
    return "GPU conditions: NVML not recorded"

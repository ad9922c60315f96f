"""Every published number the package quotes, with its citation.

Tests, report captions, CLI text and simulator defaults use these records instead of literals,
so a number and its source live in one place. Each :class:`Reference` holds the value as the
paper prints it (same unit, same rounding), the unit, what it measures, the paper and where in
the paper it is (section, table or figure). Values the package *derives* from a published
number (not printed in the paper) say so in ``note``.

References
----------
- :data:`HPCA25`: Kokolis et al., "Revisiting Reliability in Large-Scale Machine Learning
  Research Clusters", HPCA 2025 (RSC-1: 16k A100, RSC-2: 8k A100, 11 months, 4M jobs).
- :data:`NSDI24`: Zu et al., "Resiliency at Scale: Managing Google's TPUv4 Machine Learning
  Supercomputer", NSDI 2024.
- :data:`DALY06`: Daly, "A higher order estimate of the optimum checkpoint interval for
  restart dumps", Future Generation Computer Systems 22(3), 2006.
- :data:`YOUNG74`: Young, "A first order approximation to the optimum checkpoint interval",
  CACM 17(9), 1974.
- :data:`DSN06`: Schroeder & Gibson, "A large-scale study of failures in high-performance
  computing systems", DSN 2006 (the LANL 1996-2005 failure records).

Published fleets (their component tables are in :mod:`reliability.fleets`):

- :data:`DUBEY24`: Dubey et al., "The Llama 3 Herd of Models", 2024 (Table 5: 419 unexpected
  interruptions of the 405B pre-training job in 54 days).
- :data:`SALPEKAR26`: Salpekar et al., "Training LLMs with Fault Tolerant HSDP on 100,000 GPUs",
  2026 (678 unexpected interruptions at 32K H100).
- :data:`CUI25`: Cui et al., "Story of Two GPUs", SC'25 (NCSA Delta, A100 vs H100 memory errors).
- :data:`HU24`: Hu et al., "Characterization of Large Language Model Development in the
  Datacenter", NSDI'24 (Acme).
- :data:`JEON19`: Jeon et al., "Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN
  Training Workloads", USENIX ATC'19 (Philly).
- :data:`XIONG24`: Xiong et al., "SuperBench", USENIX ATC'24 (Azure incident intervals).
- :data:`WAN25`: Wan et al., "Robust LLM Training Infrastructure at ByteDance", 2025 (ByteRobust).

Where a number could only be checked against a secondary source (a summary quoting the paper),
its ``note`` says so: "checked against a secondary summary; primary not reachable here".

No SC'20 number is quoted anywhere in the package, so none is recorded here.

Examples
--------
>>> from reliability import references as ref
>>> ref.RSC1_FAILURE_RATE.value, ref.RSC1_FAILURE_RATE.unit
(6.5, 'failures per 1000 node-days')
>>> ref.RSC1_FAILURE_RATE.cite()
"Kokolis et al., HPCA'25, Fig. 7"
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

__all__ = [
    "CUI25",
    "DALY06",
    "DSN06",
    "DUBEY24",
    "HPCA25",
    "HU24",
    "JEON19",
    "NSDI24",
    "SALPEKAR26",
    "WAN25",
    "XIONG24",
    "YOUNG74",
    "Paper",
    "Reference",
    "all_references",
    "table",
]


@dataclass(frozen=True)
class Paper:
    """A publication the package quotes.

    Attributes
    ----------
    short : str
        How captions cite it, e.g. ``"Kokolis et al., HPCA'25"``.
    title, venue : str
        Full title and venue (with volume and pages where known).
    year : int
        Publication year.
    doi : str or None
        DOI (None when the venue issues none, e.g. USENIX).
    url : str
        Where to read it.
    """

    short: str
    title: str
    venue: str
    year: int
    doi: str | None
    url: str


@dataclass(frozen=True)
class Reference:
    """One published number.

    Attributes
    ----------
    value : float or tuple of float
        The number as printed (a float, or a tuple for a pair or range).
    unit : str
        Its unit, as printed (``"h"``, ``"fraction"``, ``"failures per 1000 node-days"``).
    what : str
        What it measures, in one line.
    paper : Paper
        The :class:`Paper`.
    where : str
        Section, table or figure.
    note : str
        Conditions, rounding, or how the package derives it.
    """

    value: float | tuple[float, ...]
    unit: str
    what: str
    paper: Paper
    where: str
    note: str = ""

    def cite(self) -> str:
        """Return a short citation for captions, e.g. ``"Kokolis et al., HPCA'25, Fig. 7"``.

        Returns
        -------
        str
            The paper's short name and where in it the value is.
        """
        return f"{self.paper.short}, {self.where}"


HPCA25 = Paper(
    short="Kokolis et al., HPCA'25",
    title="Revisiting Reliability in Large-Scale Machine Learning Research Clusters",
    venue="IEEE International Symposium on High Performance Computer Architecture (HPCA), "
    "pp. 1259-1274",
    year=2025,
    doi="10.1109/HPCA61900.2025.00096",
    url="https://arxiv.org/abs/2410.21680",
)
NSDI24 = Paper(
    short="Zu et al., NSDI'24",
    title="Resiliency at Scale: Managing Google's TPUv4 Machine Learning Supercomputer",
    venue="21st USENIX Symposium on Networked Systems Design and Implementation (NSDI)",
    year=2024,
    doi=None,
    url="https://www.usenix.org/conference/nsdi24/presentation/zu",
)
DALY06 = Paper(
    short="Daly, FGCS 2006",
    title="A higher order estimate of the optimum checkpoint interval for restart dumps",
    venue="Future Generation Computer Systems 22(3), pp. 303-312",
    year=2006,
    doi="10.1016/j.future.2004.11.016",
    url="https://doi.org/10.1016/j.future.2004.11.016",
)
YOUNG74 = Paper(
    short="Young, CACM 1974",
    title="A first order approximation to the optimum checkpoint interval",
    venue="Communications of the ACM 17(9), pp. 530-531",
    year=1974,
    doi="10.1145/361147.361115",
    url="https://doi.org/10.1145/361147.361115",
)
DSN06 = Paper(
    short="Schroeder & Gibson, DSN'06",
    title="A large-scale study of failures in high-performance computing systems",
    venue="International Conference on Dependable Systems and Networks (DSN), pp. 249-258",
    year=2006,
    doi="10.1109/DSN.2006.5",
    url="https://www.pdl.cmu.edu/FailureData/",
)

# ---------------------------------------------------------------- HPCA'25 (RSC-1 / RSC-2)
RSC1_FAILURE_RATE = Reference(
    6.50, "failures per 1000 node-days", "r_f of RSC-1 (jobs > 128 GPUs)", HPCA25, "Fig. 7"
)
RSC2_FAILURE_RATE = Reference(
    2.34, "failures per 1000 node-days", "r_f of RSC-2 (jobs > 128 GPUs)", HPCA25, "Fig. 7"
)
#: r_f of RSC-1 and RSC-2 [failures per node-day], for model calls
RSC1_RATE_PER_NODE_DAY: float = RSC1_FAILURE_RATE.value / 1000.0  # type: ignore[operator]
RSC2_RATE_PER_NODE_DAY: float = RSC2_FAILURE_RATE.value / 1000.0  # type: ignore[operator]
MIN_GPUS_FOR_RATE = Reference(
    128, "GPUs", "r_f counts only jobs larger than this", HPCA25, "Fig. 7 (MTTF model)"
)
MTTF_PROJECTED_16K_GPUS = Reference(
    1.8, "h", "projected MTTF of a 16,384-GPU job at r_f = 6.5", HPCA25, "Fig. 7"
)
MTTF_PROJECTED_131K_GPUS = Reference(
    0.23, "h", "projected MTTF of a 131,072-GPU job at r_f = 6.5", HPCA25, "Fig. 7"
)
MTTF_MEASURED_8_GPUS = Reference(
    47.7, "days", "measured MTTF of 8-GPU jobs", HPCA25, "Fig. 7, Observation 8",
    note="implies r_f of about 21 per 1000 node-days, not 6.5: the paper's measured points and "
    "its r_f cannot both follow 1/(N r_f)",
)  # fmt: skip
MTTF_MEASURED_1024_GPUS = Reference(
    7.9, "h", "measured MTTF of 1,024-GPU jobs", HPCA25, "Fig. 7, Observation 8",
    note="implies r_f of about 24 per 1000 node-days",
)  # fmt: skip
ETTR_16K_GPUS_DT60 = Reference(
    0.7, "ETTR", "16k GPUs (2,000 nodes) at r_f = 6.5, u0 = 5 min, checkpoint every 60 min",
    HPCA25, "§V, Observation 10",
)  # fmt: skip
ETTR_16K_GPUS_DT5 = Reference(
    0.93, "ETTR", "16k GPUs (2,000 nodes) at r_f = 6.5, u0 = 5 min, checkpoint every 5 min",
    HPCA25, "§V, Observation 10",
)  # fmt: skip
ETTR_100K_GPUS_TARGET = Reference(
    0.9, "ETTR", "target ETTR of a 100k-GPU job at the RSC-2 rate", HPCA25, "Fig. 10",
    note="needs checkpoint interval and restart overhead of about 2 minutes each",
)  # fmt: skip
ETTR_100K_GPUS_INTERVAL = Reference(
    2.0, "min", "checkpoint interval = restart overhead reaching ETTR 0.9 at 100k GPUs (RSC-2)",
    HPCA25, "Fig. 10", note="'about 2 minutes'",
)  # fmt: skip
ETTR_LARGE_JOBS_MEASURED = Reference(
    0.9, "ETTR", "largest, highest-priority jobs measured above this (1-h checkpoints assumed)",
    HPCA25, "Fig. 9, Observation 10",
)  # fmt: skip
JOB_STATE_SHARES = Reference(
    (0.60, 0.24, 0.10, 0.02, 0.006, 0.001, 0.001), "fraction of jobs",
    "RSC-1 job states: COMPLETED, FAILED, PREEMPTED, REQUEUED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY",
    HPCA25, "Fig. 3",
)  # fmt: skip
HARDWARE_JOB_SHARE = Reference(
    0.002, "fraction of jobs", "jobs ended by hardware failures", HPCA25, "Fig. 3"
)
HARDWARE_GPU_TIME_SHARE = Reference(
    0.187, "fraction of GPU runtime", "GPU runtime of jobs ended by hardware", HPCA25, "Fig. 3"
)
ONE_GPU_JOB_SHARE = Reference(
    0.40, "fraction of jobs", "jobs on 1 GPU (more than)", HPCA25, "Fig. 6"
)
SUB_NODE_JOB_SHARE = Reference(
    0.90, "fraction of jobs", "jobs on fewer than 8 GPUs (more than)", HPCA25, "Fig. 6"
)
SUB_NODE_GPU_TIME_SHARE = Reference(
    0.10, "fraction of GPU time", "GPU time of jobs on fewer than 8 GPUs (less than)", HPCA25,
    "Fig. 6",
)  # fmt: skip
LARGE_JOB_GPU_TIME_SHARE = Reference(
    (0.66, 0.52), "fraction of GPU time", "GPU time of 256+ GPU jobs, RSC-1 / RSC-2", HPCA25,
    "Fig. 6, Observation 7",
)  # fmt: skip
FAILURE_RATE_RANGE = Reference(
    (2.5, 17.5), "failures per 1000 node-days", "RSC-1 failure rate over time, low to spike",
    HPCA25, "Fig. 5, Observation 6",
)  # fmt: skip
SECONDARY_PREEMPTION_SHARE = Reference(
    0.16, "fraction of failure overhead", "overhead from preemptions caused by requeues",
    HPCA25, "Fig. 8, Observation 9",
)  # fmt: skip
CRASH_LOOP_REQUEUES = Reference(
    35, "requeues", "one 1,024-GPU job requeued this often after a NODE_FAIL", HPCA25, "Fig. 8"
)
CRASH_LOOP_PREEMPTIONS = Reference(
    548, "preemptions", "preemptions caused by that job's requeues", HPCA25, "Fig. 8"
)
LEMONS_FOUND = Reference(
    40, "nodes", "lemon nodes found (RSC-1: 24, RSC-2: 16)", HPCA25, "Observation 11"
)
LEMON_PRECISION = Reference(
    0.85, "precision", "lemon detection precision (more than)", HPCA25, "Observation 11"
)
LEMON_FOOTPRINT = Reference(
    (0.012, 0.017), "fraction of nodes", "lemon nodes, RSC-1 / RSC-2", HPCA25,
    "Observation 11",
)  # fmt: skip
LEMON_LARGE_JOB_FAILURE_RATE = Reference(
    (0.14, 0.04), "fraction of jobs", "failure rate of 512+ GPU jobs before / after removing lemons",
    HPCA25, "Observation 11",
)  # fmt: skip
LEMON_ROOT_CAUSES = Reference(
    (0.282, 0.205, 0.154, 0.103, 0.077, 0.077, 0.051, 0.026, 0.026), "fraction of lemons",
    "lemon root causes: GPU, DIMM, PCIe, EUD, NIC, BIOS, PSU, optics, CPU", HPCA25, "Table 2",
)  # fmt: skip
JOBS_PER_DAY = Reference(
    (7200, 4400), "jobs per day", "RSC-1 / RSC-2", HPCA25, "cluster description"
)
UTILIZATION = Reference(
    (0.83, 0.85), "fraction", "GPU utilization, RSC-1 / RSC-2", HPCA25, "cluster description"
)
PREEMPTIBLE_AFTER = Reference(
    2.0, "h", "jobs become preemptible after", HPCA25, "cluster description"
)
MAX_JOB_LIFETIME = Reference(7.0, "days", "maximum job lifetime", HPCA25, "cluster description")
HEALTH_CHECK_INTERVAL = Reference(
    5.0, "min", "health checks run every", HPCA25, "cluster description"
)

# ---------------------------------------------------------------- NSDI'24 (TPUv4)
POD_CUBES = Reference(64, "cubes", "cubes of 4x4x4 chips per pod (4,096 chips)", NSDI24, "§2.2")
CUBE_HOSTS = Reference(16, "hosts", "hosts per cube, 4 chips each", NSDI24, "§2.2")
MACHINE_FAILURES_PER_DAY = Reference(
    0.0008, "fraction per day", "TPU machines failing each day (0.08%)", NSDI24, "§5.2"
)
ICI_CABLE_FAILURES_PER_DAY = Reference(
    0.00005, "fraction per day", "ICI cables failing each day (0.005%)", NSDI24, "§5.2"
)
OCS_FAILURES_PER_DAY = Reference(
    0.0004, "fraction per day", "OCSes failing each day (0.04%)", NSDI24, "§5.2"
)
SYSTEM_AVAILABILITY = Reference(0.9998, "fraction", "TPUv4 system availability", NSDI24, "Abstract")
JOBS_WITH_HW_INTERRUPTION = Reference(
    0.01, "fraction of jobs", "training jobs that see a hardware interruption (about)", NSDI24,
    "Abstract",
)  # fmt: skip
FIG1_AVAILABILITY_50_CUBES = Reference(
    0.94, "fraction", "TPUv4 job availability at about 3,200 chips (50 cubes)", NSDI24, "Fig. 1"
)
FIG1_HOST_AVAILABILITY = Reference(
    0.9896, "fraction", "host availability implied by Fig. 1's 94% at 50 cubes", NSDI24, "Fig. 1",
    note="derived by the package (binomial model P(Binomial(64, a^16) >= 50) = 0.94), "
    "not printed in the paper",
)  # fmt: skip
HOST_AVAILABILITY_NEEDED = Reference(
    (0.999, 0.99), "fraction", "host availability needed: static / reconfigurable pod", NSDI24,
    "§2.1",
)  # fmt: skip
FT_ROUTING_OPT_IN = Reference(
    0.95, "fraction of jobs", "jobs opting in to FT routing", NSDI24, "§5.3"
)
FT_ROUTING_IN_USE = Reference(
    0.02, "fraction of jobs", "jobs running on FT routing at any time (less than)", NSDI24, "§5.3"
)
FT_ROUTING_STEP_COST = Reference(
    (0.005, 0.086), "fraction of step time", "step-time cost of FT routing, range", NSDI24,
    "Table 3 (§5.3)",
)  # fmt: skip
ALL_TO_ALL_4X4X4 = Reference(
    (75.9, 70.0),
    "GB/s",
    "4x4x4 all-to-all, healthy / one OCS down (92.2%)",
    NSDI24,
    "Table 2 (§4.3)",
)
ALL_TO_ALL_4X4X8T = Reference(
    (62.1, 63.2), "GB/s", "4x4x8 twisted all-to-all, healthy / one OCS down (101.7%)", NSDI24,
    "Table 2 (§4.3)",
)  # fmt: skip
ALL_TO_ALL_4X8X8T = Reference(
    (54.3, 53.7), "GB/s", "4x8x8 twisted all-to-all, healthy / one OCS down (98.8%)", NSDI24,
    "Table 2 (§4.3)",
)  # fmt: skip

# ---------------------------------------------------------------- Daly 2006, Young 1974
DALY_WRITE_MIN = Reference(
    5.0, "min", "checkpoint write time δ of the worked examples", DALY06, "Figs. 3-5"
)
DALY_RESTART_MIN = Reference(
    10.0, "min", "restart time R of the worked examples", DALY06, "Figs. 3-5"
)
DALY_OPTIMUM_M24H = Reference(117.0, "min", "optimum interval at M = 24 h", DALY06, "Fig. 3")
DALY_OPTIMUM_M6H = Reference(57.0, "min", "optimum interval at M = 6 h", DALY06, "Fig. 4")
DALY_OPTIMUM_M15MIN = Reference(9.1, "min", "optimum interval at M = 15 min", DALY06, "Fig. 5")

# ---------------------------------------------------------------- DSN'06 (LANL)
LANL_SYSTEMS = Reference(
    22, "systems", "LANL systems in the failure records", DSN06, "data description"
)
LANL_FAILURES = Reference(
    23000, "failures", "failure records, 1996-2005 (about)", DSN06, "Abstract"
)
LANL_FAILURES_PER_YEAR = Reference(
    (20, 1000), "failures per year", "average failure rate per system, range", DSN06, "Abstract"
)
TBF_WEIBULL_SHAPE = Reference(
    (0.7, 0.8), "Weibull shape", "time between failures per node and per system: Weibull with "
    "decreasing hazard", DSN06, "analysis of the time between failures",
)  # fmt: skip


# ---------------------------------------------------------------- published fleets
#: how a number checked only against a summary that quotes the paper is marked
SECONDARY = "checked against a secondary summary quoting the paper; primary not reachable here"

DUBEY24 = Paper(
    short="Dubey et al., 2024 (Llama 3)",
    title="The Llama 3 Herd of Models",
    venue="arXiv:2407.21783",
    year=2024,
    doi="10.48550/arXiv.2407.21783",
    url="https://arxiv.org/abs/2407.21783",
)
SALPEKAR26 = Paper(
    short="Salpekar et al., 2026 (FT-HSDP)",
    title="Training LLMs with Fault Tolerant HSDP on 100,000 GPUs",
    venue="arXiv:2602.00277",
    year=2026,
    doi="10.48550/arXiv.2602.00277",
    url="https://arxiv.org/abs/2602.00277",
)
CUI25 = Paper(
    short="Cui et al., SC'25 (NCSA Delta)",
    title="Story of Two GPUs: Characterizing the Resilience of Hopper H100 and Ampere A100 GPUs",
    venue="SC '25 (arXiv:2503.11901)",
    year=2025,
    doi=None,
    url="https://arxiv.org/abs/2503.11901",
)
HU24 = Paper(
    short="Hu et al., NSDI'24 (Acme)",
    title="Characterization of Large Language Model Development in the Datacenter",
    venue="21st USENIX Symposium on Networked Systems Design and Implementation (NSDI), "
    "pp. 709-729",
    year=2024,
    doi=None,
    url="https://arxiv.org/abs/2403.07648",
)
JEON19 = Paper(
    short="Jeon et al., ATC'19 (Philly)",
    title="Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN Training Workloads",
    venue="USENIX Annual Technical Conference (ATC)",
    year=2019,
    doi=None,
    url="https://arxiv.org/abs/1901.05758",
)
XIONG24 = Paper(
    short="Xiong et al., ATC'24 (SuperBench)",
    title="SuperBench: Improving Cloud AI Infrastructure Reliability with Proactive Validation",
    venue="USENIX Annual Technical Conference (ATC)",
    year=2024,
    doi=None,
    url="https://arxiv.org/abs/2402.06194",
)
WAN25 = Paper(
    short="Wan et al., 2025 (ByteRobust)",
    title="Robust LLM Training Infrastructure at ByteDance",
    venue="arXiv:2509.16293",
    year=2025,
    doi="10.48550/arXiv.2509.16293",
    url="https://arxiv.org/abs/2509.16293",
)

# Llama 3: checked against the paper's text (a text extraction of the arXiv PDF, §3.3.4 and
# Table 5, stored in a public repository) and glennklockwood.com/garden/component-reliability
LLAMA3_GPUS = Reference(
    16384, "GPUs", "H100 80GB GPUs of the Llama 3 405B pre-training job", DUBEY24, "§3.3",
    note="printed as '16K GPUs'; 16,384 = 2,048 Grand Teton servers of 8 GPUs (§3.3.1)",
)  # fmt: skip
LLAMA3_GPUS_PER_SERVER = Reference(8, "GPUs", "GPUs per Grand Teton server", DUBEY24, "§3.3.1")
LLAMA3_DAYS = Reference(
    54, "days", "snapshot of the 405B pre-training the interruptions are counted over", DUBEY24,
    "§3.3.4, Table 5",
)  # fmt: skip
LLAMA3_INTERRUPTIONS = Reference(
    (466, 47, 419), "job interruptions", "total, planned (automated maintenance), unexpected",
    DUBEY24, "§3.3.4",
)  # fmt: skip
LLAMA3_GPU_ISSUES_SHARE = Reference(
    0.587, "fraction of unexpected interruptions", "GPU issues, the largest category", DUBEY24,
    "§3.3.4",
    note="Table 5's rows of category GPU add up to 268 of 419 = 64.0%, not 58.7%",
)  # fmt: skip
LLAMA3_HARDWARE_SHARE = Reference(
    0.78, "fraction of unexpected interruptions", "confirmed or suspected hardware (about)",
    DUBEY24, "§3.3.4, Table 5 caption",
)  # fmt: skip

# FT-HSDP: only secondary summaries were reachable (the arXiv abstract page gives no counts)
FTHSDP_INTERRUPTIONS = Reference(
    678, "unexpected interruptions", "of production training at 32K H100 GPUs, by 16 categories",
    SALPEKAR26, "Table 1", note=SECONDARY + "; the observation period is not given there",
)  # fmt: skip
FTHSDP_RATE = Reference(
    2.3, "interruptions per 1000 servers per day", "measured at 32K GPUs", SALPEKAR26, "§2",
    note=SECONDARY,
)  # fmt: skip
FTHSDP_MTBF_100K = Reference(
    18.0, "min", "measured MTBF of synchronous training at about 100K (98K) GPUs", SALPEKAR26,
    "§2", note=SECONDARY,
)  # fmt: skip
FTHSDP_ETTR = Reference(
    (0.44, 0.80), "ETTR", "effective training time at O(100K) GPUs: synchronous / FT-HSDP",
    SALPEKAR26, "Abstract",
)  # fmt: skip

# NCSA Delta: the abstract (arXiv 2503.11901v3 page) checked; counts and MTBEs secondary (v4)
DELTA_GPU_HOURS = Reference(
    11.7e6, "GPU-hours", "operational data of 1,056 A100 and H100 GPUs over 2.5 years", CUI25,
    "Abstract",
)  # fmt: skip
DELTA_GPUS = Reference(
    (448, 608), "GPUs", "A100 40GB / H100 96GB (GH200, 4 per node)", CUI25, "§2",
    note=SECONDARY,
)  # fmt: skip
DELTA_DAYS = Reference((895, 146), "days", "A100 / H100 observation", CUI25, "§2", note=SECONDARY)
DELTA_MEMORY_ERRORS = Reference(
    (34, 24), "errors", "uncorrectable GPU memory errors, A100 / H100", CUI25, "Table 1",
    note=SECONDARY,
)  # fmt: skip
DELTA_MEMORY_MTBE = Reference(
    (283271, 88768), "h", "per-GPU MTBE of uncorrectable memory errors, A100 / H100", CUI25,
    "Table 1", note=SECONDARY,
)  # fmt: skip
DELTA_MTBE_RATIO = Reference(
    3.2, "ratio", "H100's per-GPU memory MTBE is this much lower than A100's", CUI25, "Abstract"
)

# Acme, Philly, SuperBench, ByteRobust: secondary summaries only
ACME_FAILED_JOBS = Reference(
    (281, 404, 1890), "failed jobs", "by category: infrastructure, framework, script", HU24,
    "failure table (§5)", note=SECONDARY,
)  # fmt: skip
ACME_INFRASTRUCTURE_SHARES = Reference(
    (0.11, 0.82), "fraction", "infrastructure failures: of failed jobs (about) / of failed "
    "jobs' GPU time (about)", HU24, "failure table (§5)", note=SECONDARY,
)  # fmt: skip
PHILLY_UNSUCCESSFUL = Reference(
    (0.172, 0.1776), "fraction", "unsuccessful jobs (16,568): of jobs / of GPU time", JEON19,
    "Table 6", note=SECONDARY,
)  # fmt: skip
PHILLY_GPU_ECC_FAILURES = Reference(
    10, "failure trials", "GPU ECC errors, the one clearly hardware-rooted failure class", JEON19,
    "failure classification table", note=SECONDARY,
)  # fmt: skip
SUPERBENCH_NODE_MTBI = Reference(
    (719.4, 151.7), "h", "per-node mean time between incidents at the 1st / the 20th incident "
    "(repaired nodes fail sooner)", XIONG24, "incident analysis", note=SECONDARY,
)  # fmt: skip
SUPERBENCH_DEFECTIVE_NODES = Reference(
    0.1036, "fraction of nodes", "nodes failing proactive validation (24k+ A100 GPUs)", XIONG24,
    "validation results", note=SECONDARY,
)  # fmt: skip
BYTEROBUST_INCIDENTS = Reference(
    55366, "incidents", "over 778,135 training jobs in three months", WAN25, "incident table",
    note=SECONDARY,
)  # fmt: skip
BYTEROBUST_INCIDENT_PARTS = Reference(
    (38236, 5948, 9582), "incidents", "explicit failures / implicit failures / manual restarts",
    WAN25, "incident table",
    note=SECONDARY + "; they add up to 53,766, not the printed 55,366",
)  # fmt: skip


def all_references() -> dict[str, Reference]:
    """Collect every :class:`Reference` of this module by its constant name.

    Returns
    -------
    dict of str to Reference
        Constant name -> reference.
    """
    return {k: v for k, v in globals().items() if isinstance(v, Reference)}


def table() -> pl.DataFrame:
    """Tabulate all references.

    Returns
    -------
    polars.DataFrame
        One row per reference, all strings: ``name``, ``value`` (as printed), ``unit``, ``what``,
        ``paper``, ``where``, ``doi``, ``note``.
    """
    rows = [
        {
            "name": k,
            "value": ", ".join(
                f"{x:g}" for x in (r.value if isinstance(r.value, tuple) else (r.value,))
            ),
            "unit": r.unit,
            "what": r.what,
            "paper": r.paper.short,
            "where": r.where,
            "doi": r.paper.doi,
            "note": r.note,
        }
        for k, r in all_references().items()
    ]
    return pl.DataFrame(rows, schema={c: pl.String for c in rows[0]})

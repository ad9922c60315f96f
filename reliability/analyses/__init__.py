"""Analyses: the library's composite calls over a Dataset, returning typed results.

Each composes the models the way the pipeline's stages and the CLI do, so a notebook gets the
same numbers as the report: :func:`attribute` (how every attempt ended, the GPUs per node),
:func:`analyze_cluster` (attribution, r_f and MTTF by size, weekly rates, workload),
:func:`analyze_node_health` (out-of-service time, availability, repeat offenders),
:func:`lemon_report` (lemon nodes: the test or a trained detector) and :func:`analyze_pods`
(TPU pods: rates, availability, recovery paths);
:func:`attribute_by_cluster` attributes one cluster per task on Dask (equal to the serial run);
:func:`write_attributed_by_cluster` does so with each task writing its part to disk (a fleet
larger than memory: the models read the parts as a ``LazyFrame``); :func:`ettr_by_cluster` and
:func:`features_by_cluster` compute a fleet's run ETTR and lemon features from those parts, one
cluster per task (equal to the serial calls).
"""

from reliability.analyses.attribution import (
    DEFAULT_GPUS_PER_NODE,
    AttributionResult,
    attribute,
    gpus_per_node_of,
)
from reliability.analyses.cluster import ClusterAnalysis, analyze_cluster
from reliability.analyses.distributed import (
    attribute_by_cluster,
    attributed_parts,
    attributed_scan,
    reusable_parts,
    write_attributed_by_cluster,
)
from reliability.analyses.fleet import ettr_by_cluster, features_by_cluster
from reliability.analyses.health import analyze_node_health
from reliability.analyses.lemons import (
    BUNDLED_WINDOW_DAYS,
    DETECTOR_ATTRIBUTION,
    LemonReport,
    lemon_report,
    load_detector,
    uncalibrated_note,
)
from reliability.analyses.pods import PodAnalysis, analyze_pods

__all__ = [
    "BUNDLED_WINDOW_DAYS",
    "DEFAULT_GPUS_PER_NODE",
    "DETECTOR_ATTRIBUTION",
    "AttributionResult",
    "ClusterAnalysis",
    "LemonReport",
    "PodAnalysis",
    "analyze_cluster",
    "analyze_node_health",
    "analyze_pods",
    "attribute",
    "attribute_by_cluster",
    "attributed_parts",
    "attributed_scan",
    "ettr_by_cluster",
    "features_by_cluster",
    "gpus_per_node_of",
    "lemon_report",
    "load_detector",
    "reusable_parts",
    "uncalibrated_note",
    "write_attributed_by_cluster",
]

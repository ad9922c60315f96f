"""Analyses: the library's composite calls over a Dataset, returning typed results.

Each composes the models the way the pipeline's stages and the CLI do, so a notebook gets the
same numbers as the report: :func:`attribute` (how every attempt ended, the GPUs per node) and
:func:`analyze_cluster` (attribution, r_f and MTTF by size, weekly rates, workload);
:func:`attribute_by_cluster` attributes one cluster per task on Dask (equal to the serial run).
"""

from reliability.analyses.attribution import (
    DEFAULT_GPUS_PER_NODE,
    AttributionResult,
    attribute,
    gpus_per_node_of,
)
from reliability.analyses.cluster import ClusterAnalysis, analyze_cluster
from reliability.analyses.distributed import attribute_by_cluster

__all__ = [
    "DEFAULT_GPUS_PER_NODE",
    "AttributionResult",
    "ClusterAnalysis",
    "analyze_cluster",
    "attribute",
    "attribute_by_cluster",
    "gpus_per_node_of",
]

"""Pipelines: a TOML file of inputs, analyses and a report, run as cached stages.

``reliability run pipelines/demo.toml`` or :func:`run_pipeline`. See
:mod:`reliability.pipeline.config` for the file format.
"""

from reliability.pipeline.config import PipelineConfig, PipelineError, load_pipeline
from reliability.pipeline.runner import RunResult, run_pipeline
from reliability.pipeline.stages import RunResults

__all__ = [
    "PipelineConfig",
    "PipelineError",
    "RunResult",
    "RunResults",
    "load_pipeline",
    "run_pipeline",
]

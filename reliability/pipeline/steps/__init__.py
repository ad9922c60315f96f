"""The pipeline's stages, one module per topic.

Each holds the stage functions (a pure function of the configuration and the upstream stages'
results, returning a typed result) and the report sections that render those results (see
:mod:`reliability.pipeline.stages`).
"""

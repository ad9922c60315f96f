"""Independent generators of Slurm cluster histories with a known truth.

Two generators written from the specification (Slurm's semantics, the failure model) and from
real Slurm output, sharing no code with ``reliability.sim``: :func:`generate_a` (event-driven
scheduler with backfill, ``--requeue``, preemption, epoch times, one kernel log) and
:func:`generate_b` (time-stepped first-fit scheduler with random placement, no requeue but
resubmissions under new ids, job arrays, local times in a named zone, one kernel log per
node). Both write the raw files the package reads and return a :class:`History` with the
truth.
"""

from generators._common import History, Vocabulary
from generators.gen_a import SITE_A_VOCABULARY, generate_a
from generators.gen_b import SITE_B_VOCABULARY, generate_b

__all__ = [
    "SITE_A_VOCABULARY",
    "SITE_B_VOCABULARY",
    "History",
    "Vocabulary",
    "generate_a",
    "generate_b",
]

"""Independent generators of Slurm cluster histories with a known truth.

Two generators written from the specification (Slurm's semantics, the failure model) and from
real Slurm 22.05 output (``shared/data/slurm-real-run1``), sharing no code with
``reliability.sim``, so that the package's inference can be validated on worlds it did not
build:

- :func:`generate_a`: an event-driven scheduler with priorities, EASY backfill and contiguous
  placement on ``gpu-a0001``-style nodes of 8 GPUs; ``--requeue`` (``NODE_FAIL`` /
  ``REQUEUED`` then a new attempt of the same JobID), QOS preemption, ``.batch`` /
  ``.extern`` / ``.0`` step lines, epoch times, one syslog ``kern.log``; failures sampled by
  inverting the integrated rate.
- :func:`generate_b`: a time-stepped first-fit scheduler with random placement on rack-named
  nodes (``r03n17``) of 4 GPUs; no requeue (users resubmit under a new JobID with the same
  name), job arrays (``123_4``, a pending remainder ``123_[5-9%4]``), local times in a named
  zone, one kernel log per node; failures sampled by thinning.

Both write ``sacct.psv``, ``sacctmgr_events.psv``, kernel logs and ``truth/`` (parquet + JSON)
and return a :class:`History`; the failure law (per-node Poisson rates, lemons, weekly Gamma
swings on calendar weeks, a trend), the failure mechanisms (not responding, health-check
drain, Xid, silent) and the reason vocabularies are described in each module.

Example::

    from generators import generate_a
    from reliability import Dataset, attribute_failures

    h = generate_a(tmp_path, seed=1, n_nodes=1024, days=60, base_rate_per_1000_node_days=6)
    ds = Dataset(tmp_path / "ds")
    h.ingest(ds)  # sacct, events and kernel logs with the right tz / year / observed_at
    jobs = attribute_failures(ds).join(h.attempts, on=["job_id", "attempt"])
    h.true_rate(h.attempts.filter(pl.col("n_gpus") >= 129))  # the true r_f of that subset
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

"""Models: failure rates and MTTF (more land with their issues)."""

from reliability.models.mttf import SIZE_BUCKETS, MTTFResult, fit_mttf, mttf_h, poisson_ci

__all__ = ["SIZE_BUCKETS", "MTTFResult", "fit_mttf", "mttf_h", "poisson_ci"]

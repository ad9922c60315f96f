"""``reliability.models`` in groups: every name of the flat API of the release before is still
reached, from its group and (deprecated, for one release) from the flat namespace."""

from __future__ import annotations

import importlib
import warnings

import pytest

#: ``reliability.models.__all__`` of the release before the grouping (copied from it)
FLAT_API = (
    "CPU_ONLY_BUCKET",
    "CRASH_LOOP_MIN_REQUEUES",
    "ComponentReliability",
    "CrowAMSAA",
    "ESTIMANDS",
    "ETTRApproximationWarning",
    "ETTRSimulation",
    "FleetComparison",
    "InterFailureResult",
    "LEMON_FEATURES",
    "LemonDetector",
    "LifetimeFit",
    "LifetimeResult",
    "MTTFResult",
    "MeasuredAvailability",
    "ModelFileError",
    "NodeHealth",
    "OUT_OF_SERVICE",
    "PODS",
    "PlanResult",
    "PodJobStats",
    "PodSpec",
    "PublishedFleets",
    "RateEstimate",
    "RateSeries",
    "RecoveryComparison",
    "RecoveryCosts",
    "RunETTR",
    "SIZE_BUCKETS",
    "ScalingCheck",
    "StrategyComparison",
    "StrategySimulation",
    "ThroughputResult",
    "TrendTest",
    "VARIANTS",
    "WorkloadResult",
    "all_to_all_throughput",
    "availability_curve",
    "check_scaling",
    "compare_fleets",
    "compare_strategies",
    "component_failure_rates",
    "component_reliability",
    "count_baseline",
    "crash_loops",
    "crow_amsaa",
    "daly_interval_h",
    "dimension_order_load",
    "dominant_component",
    "estimate_rate",
    "expected_ettr",
    "failure_rate_series",
    "failure_taxonomy",
    "failures_by_node",
    "fit_interfailure",
    "fit_lifetimes",
    "fit_mttf",
    "fit_weibull",
    "glm_slope",
    "hardware_failed_jobs",
    "hardware_share",
    "hazard_verdict",
    "identify_pods",
    "interfailure_times",
    "interruption_rate_per_h",
    "job_availability",
    "job_interruptions",
    "job_run_ettr",
    "job_size_distribution",
    "job_state_breakdown",
    "lifetime_table",
    "measured_job_availability",
    "mttf_h",
    "node_features",
    "node_health",
    "node_incidents",
    "node_mttf",
    "optimal_interval_h",
    "plan",
    "pod_job_stats",
    "poisson_ci",
    "poisson_regression",
    "published_fleets",
    "rate_interval",
    "recovery_costs",
    "recovery_paths",
    "required_host_availability",
    "rule_baseline",
    "score_nodes",
    "secondary_preemptions",
    "signal_cooccurrence",
    "simulate_ettr",
    "simulate_strategy",
    "spares_needed",
    "steady_state_availability",
    "trend_test",
    "weibull_mle",
    "workload_summary",
    "young_interval_h",
)

GROUPS = ("failures", "recovery", "nodes", "pods", "lifetimes", "fleets")


@pytest.mark.parametrize("name", FLAT_API)
def test_every_flat_name_warns_and_is_the_groups_object(name):
    import reliability.models as models

    with pytest.warns(DeprecationWarning, match=r"reliability\.models\.(\w+)\.\w+"):
        flat = getattr(models, name)
    homes = [
        g
        for g in GROUPS
        if name in getattr(models, g).__all__ or (name == "LEMON_FEATURES" and g == "nodes")
    ]
    assert len(homes) == 1, (name, homes)
    assert flat is getattr(getattr(models, homes[0]), name)


def test_each_group_declares_only_what_it_holds():
    """Each group's ``__all__`` names objects importable from it, groups share no name, and the
    package's own ``__all__`` is the groups."""
    import reliability.models as models

    assert sorted(models.__all__) == sorted(GROUPS)
    seen: dict[str, str] = {}
    for g in GROUPS:
        mod = importlib.import_module(f"reliability.models.{g}")
        for n in mod.__all__:
            assert hasattr(mod, n), (g, n)
            assert n not in seen, (n, seen.get(n), g)
            seen[n] = g


def test_an_unknown_name_is_an_attribute_error_without_a_warning():
    import reliability.models as models

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match="no_such_model"):
            models.no_such_model  # noqa: B018


def test_from_import_of_a_flat_name_warns_once():
    """`from reliability.models import fit_mttf` warned twice (the import system's check,
    then the import); once now, pointing at the importing line."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec("from reliability.models import fit_mttf", {})
    moved = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert len(moved) == 1
    assert "reliability.models.failures.fit_mttf" in str(moved[0].message)
    assert moved[0].filename == "<string>"

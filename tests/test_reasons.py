"""Node-state reason classes (reliability.reasons): hand-labelled reasons from real Slurm
output (run 1), health checks' and vendor tools' wordings, and administrators' drains."""

from __future__ import annotations

import pytest

from reliability.errors import ReliabilityError
from reliability.reasons import REASON_CLASSES, ReasonRules

LABELLED = [
    # (reason, user, class, component) -- the class a reliability engineer would give it
    ("GPU ECC errors <xid 79> on gpu:1", "slurm(64030)", "signal", "gpu"),
    ("Xid 48 DBE", "root(0)", "signal", "gpu_memory"),
    ("Prolog error", "slurm(64030)", "slurm", "software"),
    ("Kill task failed", "slurm(64030)", "slurm", "software"),
    ("Not responding", "slurm(64030)", "unclassified", "unknown"),
    ("PSU failure (test) - see ticket #4711", "root(0)", "signal", "psu"),  # run 1, node03
    ("maintenance: bad DIMM | ticket #4711, cc <ops@example.org>", "root(0)", "signal", "dimm"),
    ("node04: kernel panic | hung task", "root(0)", "unclassified", "unknown"),
    ("NHC: check_hw_gpu failed", "root(0)", "unclassified", "unknown"),
    ("nvidia-smi timeout", "root(0)", "signal", "gpu"),
    ("BMC SEL: critical event", "root(0)", "signal", "bios"),
    ("IB port down mlx5_0", "root(0)", "signal", "ib_link"),
    ("thermal throttle", "root(0)", "signal", "machine"),
    ("disk /local failed", "root(0)", "signal", "disk"),
    ("node unhealthy - see ops", "root(0)", "unclassified", "unknown"),
    ("see ticket 123", None, "unclassified", "unknown"),
    (None, None, "unclassified", "unknown"),
    ("maintenance window 2025-03-04", "root(0)", "administrative", None),
    ("reboot for kernel upgrade", "root(0)", "administrative", None),
    ("RESV: benchmark", "root(0)", "administrative", None),
    ("draining for reinstall", "root(0)", "administrative", None),
    ("nvidia driver update", "root(0)", "administrative", None),
    ("looking into it", "jsmith(1203)", "administrative", None),  # set by a person
    ("looking into it", "root(0)", "unclassified", "unknown"),
    ("GPU fell off the bus, rebooting", "jsmith(1203)", "signal", "gpu"),  # a signal wins
]


@pytest.mark.parametrize(("reason", "user", "cls", "component"), LABELLED)
def test_labelled_reasons(reason, user, cls, component):
    got = ReasonRules().classify(reason, user)
    assert (got["reason_class"], got["component"]) == (cls, component)
    assert got["reason_class"] in REASON_CLASSES
    # the domain the evidence gives: hardware for node faults, none for administrators'
    if cls == "administrative":
        assert got["domain"] is None
    elif cls == "unclassified":
        assert got["domain"] == "hardware"


def test_a_signal_in_the_users_domain_is_said_so():
    assert ReasonRules().classify("Xid 13", "root(0)")["domain"] == "user"


def test_rules_from_a_pipeline_table_name_the_bad_key(tmp_path):
    table = {"administrative": ["^cordoned"], "components": {"psu": ["\\bpdu\\b"]}}
    r = ReasonRules.from_mapping(table, "p.toml: [attribution.reasons]")
    assert r.classify("cordoned by ops", "root(0)")["reason_class"] == "administrative"
    assert r.classify("PDU alarm", "root(0)")["component"] == "psu"
    with pytest.raises(ReliabilityError, match=r"\[attribution.reasons\].admin: unknown key"):
        ReasonRules.from_mapping({"admin": ["x"]}, "p.toml: [attribution.reasons]")
    with pytest.raises(ReliabilityError, match=r"\.fault: expected a list of strings"):
        ReasonRules.from_mapping({"fault": [1]}, "p.toml: [attribution.reasons]")
    f = tmp_path / "reasons.toml"
    f.write_text('administrative = ["^quiesce"]\n[components]\nnic = ["\\\\bbond0\\\\b"]\n')
    r = ReasonRules.from_file(f)
    assert r.classify("quiesce for move", None)["reason_class"] == "administrative"
    assert r.classify("bond0 flapping", None)["component"] == "nic"
    f.write_text("administrative = [")
    with pytest.raises(ReliabilityError, match="not TOML"):
        ReasonRules.from_file(f)

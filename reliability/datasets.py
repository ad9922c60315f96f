"""Bundled sample data: file paths and a ready-made sample Dataset.

Works from an installed wheel (files under ``reliability/_bundled``) and from a source
checkout (the top-level ``datasets/`` folder). See ``datasets/README.md`` for sources and
licenses.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from reliability.store import Dataset

__all__ = ["data_dir", "load_sample_dataset", "sample_files", "simulated_demo"]

#: Boot time assumed for the bundled ``[seconds since boot]`` dmesg sample (it has none).
SAMPLE_BOOT_TIME = datetime(2025, 3, 1, tzinfo=UTC)


def data_dir() -> Path:
    """Locate the folder holding the bundled data files.

    Returns
    -------
    Path
        ``reliability/_bundled`` in an installed wheel, else ``datasets/`` of the source tree.

    Raises
    ------
    FileNotFoundError
        If neither exists.
    """
    here = Path(__file__).resolve().parent
    for cand in (here / "_bundled", here.parent / "datasets"):
        if (cand / "README.md").is_file():
            return cand
    raise FileNotFoundError("bundled data not found (neither reliability/_bundled nor datasets/)")


def sample_files() -> dict[str, Path]:
    """List every bundled data file.

    Returns
    -------
    dict of str to Path
        Path relative to :func:`data_dir` (POSIX form) -> absolute path, sorted.
    """
    root = data_dir()
    return {
        p.relative_to(root).as_posix(): p
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "README.md"
    }


def load_sample_dataset(path: str | Path) -> Dataset:
    """Ingest every bundled sample into a Dataset (a no-op for inputs already there).

    The GC3Pie sample is headerless ``--parsable`` output of the fields GC3Pie asks for; the
    dmesg samples are read as node ``gpu-node-01`` / ``gpu-node-02``.

    Parameters
    ----------
    path : str or Path
        The Dataset folder; created if missing.

    Returns
    -------
    Dataset
        The Dataset holding the samples.
    """
    root = data_dir()
    ds = Dataset(path)
    ds.ingest("slurm", root / "synthetic" / "sacct_synth_2000.psv", tz="UTC")
    ds.ingest(
        "slurm",
        root / "gc3pie" / "sacct_samples_gc3pie.txt",
        cluster="gc3pie",
        tz="Europe/Zurich",
        fields=[
            "JobID",
            "ExitCode",
            "State",
            "NCPUS",
            "Elapsed",
            "TotalCPU",
            "Submit",
            "Start",
            "End",
            "MaxRSS",
            "MaxVMSize",
        ],
    )
    ds.ingest(
        "kernel",
        root / "gpud" / "dmesg-with-xid-119.log",
        cluster="synth",
        node="gpu-node-01",
        tz="UTC",
    )
    ds.ingest(
        "kernel",
        root / "gpud" / "sxid-readme-xid79-sxid20034.log",
        cluster="synth",
        node="gpu-node-02",
        boot_time=SAMPLE_BOOT_TIME,
    )
    ds.ingest(
        "dcgm",
        root / "dcgm" / "readme_sentinel_values.prom",
        cluster="synth",
        node="gpu-node-03",
        scraped_at=SAMPLE_BOOT_TIME,
    )
    return ds


def simulated_demo(folder: str | Path, *, preset: str = "small", seed: int = 0) -> Dataset:
    """Simulate a cluster and ingest its logs, with the bundled real samples, into a Dataset.

    Runs the bundled cluster simulator, writes its raw logs to ``folder/sim`` and ingests them
    into ``folder/dataset``. Rerunning with the same arguments rewrites identical files, so the
    ingest is a no-op.

    Parameters
    ----------
    folder : str or Path
        Working folder for ``sim/`` and ``dataset/``.
    preset : str
        Simulator preset name (e.g. ``"small"``).
    seed : int
        Simulator seed (same seed, same logs).

    Returns
    -------
    Dataset
        The Dataset at ``folder/dataset``.
    """
    from reliability.sim.run import simulate_cluster
    from reliability.simulated import ingest_simulation

    folder = Path(folder)
    simulate_cluster(preset, seed=seed).write(folder / "sim")
    ingest_simulation(folder / "sim", folder / "dataset")
    return load_sample_dataset(folder / "dataset")

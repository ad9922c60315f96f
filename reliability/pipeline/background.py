"""Run one pipeline stage on a second process, beside the rest of the run.

The child is a fresh ``python -m reliability.pipeline.background`` process, not a
:mod:`multiprocessing` worker: it imports this package only, never the caller's script, so a
script without an ``if __name__ == "__main__":`` guard, a notebook or code read from stdin
run the same way as the ``reliability run`` command does. The job (the configuration, the
stage's name and the cache folders of the stages it needs) reaches the child as a pickle in
the stage's own cache folder, written by the parent just before; the child saves the stage's
result there as the runner does, or, when the stage fails, its exception (pickled when it can
be, else as text), which :meth:`BackgroundStage.result` raises again in the parent. The child
dies with its parent (:func:`reliability.parallel._die_with_parent`).
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["BackgroundStage"]

_JOB, _DONE, _ERROR, _LOG = "_bg_job.pkl", "_bg_seconds.txt", "_bg_error.pkl", "_bg_stderr.txt"


class BackgroundStage:
    """A stage started on a child process.

    Parameters
    ----------
    cfg : PipelineConfig
        The pipeline configuration.
    name : str
        The stage's name.
    deps : dict of str to pathlib.Path
        The cache folder of each stage it needs (their results are saved there).
    work : pathlib.Path
        The stage's cache folder (empty); its result is saved there.
    """

    def __init__(self, cfg: Any, name: str, deps: dict[str, Path], work: Path) -> None:
        self.name, self.work = name, work
        job = {"cfg": cfg, "name": name, "deps": {k: str(v) for k, v in deps.items()},
               "work": str(work), "parent": os.getpid()}  # fmt: skip
        (work / _JOB).write_bytes(pickle.dumps(job))
        root = str(Path(__file__).resolve().parents[2])  # the folder holding the package
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (root, os.environ.get("PYTHONPATH", "")) if p
        )}  # fmt: skip
        self._log = open(work / _LOG, "wb")  # noqa: SIM115 - closed in result()/kill()
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "reliability.pipeline.background", str(work / _JOB)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._log, env=env,
        )  # fmt: skip

    def result(self) -> float:
        """Wait for the stage; give its time [s], or raise the error it ended with.

        Returns
        -------
        float
            How long the stage ran [s].
        """
        code = self._proc.wait()
        self._log.close()
        if code == 0 and (self.work / _DONE).is_file():
            seconds = float((self.work / _DONE).read_text(encoding="utf-8"))
            for name in (_JOB, _DONE, _LOG):
                (self.work / name).unlink(missing_ok=True)
            return seconds
        if (self.work / _ERROR).is_file():
            raise pickle.loads((self.work / _ERROR).read_bytes())
        tail = (self.work / _LOG).read_text(encoding="utf-8", errors="replace")[-2000:]
        raise RuntimeError(
            f"stage {self.name} ended on its second process with exit code {code}: {tail.strip()}"
        )

    def kill(self) -> None:
        """Stop the child (the run failed elsewhere first)."""
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        self._log.close()


def _main(job_path: str) -> int:
    from reliability.parallel import _die_with_parent
    from reliability.pipeline.runner import _run_stage

    job = pickle.loads(Path(job_path).read_bytes())
    _die_with_parent(job["parent"])
    work = Path(job["work"])
    try:
        seconds = _run_stage(job["cfg"], job["name"], job["deps"], job["work"])
    except BaseException as exc:  # handed to the parent, which raises it
        try:
            blob = pickle.dumps(exc)
            pickle.loads(blob)
        except Exception:
            blob = pickle.dumps(RuntimeError(f"stage {job['name']}: {type(exc).__name__}: {exc}"))
        (work / _ERROR).write_bytes(blob)
        return 1
    (work / _DONE).write_text(repr(seconds), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1]))

"""Run one pipeline stage on a second process, beside the rest of the run.

The child is a fresh ``python -P -m reliability.pipeline.background`` process, not a
:mod:`multiprocessing` worker: it imports this package only (the one the parent runs: ``-P``
keeps the working directory off its path), never the caller's script, so a script without an
``if __name__ == "__main__":`` guard, a notebook or code read from stdin run the same way as
the ``reliability run`` command does. The job (the configuration, the stage's name and the
cache folders of the stages it needs) reaches the child as a pickle in the stage's own cache
folder, written by the parent just before and removed by the child once read; the child saves
the stage's result there as the runner does (``meta.json`` last, with the stage's time), or,
when the stage fails, its exception with the child's traceback as a note (pickled when it can
be, else as text), which :meth:`BackgroundStage.result` raises again in the parent. The child
dies with its parent (:func:`reliability.parallel._die_with_parent`).
"""

from __future__ import annotations

import json
import os
import pickle
import site
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

__all__ = ["BackgroundStage"]

_JOB, _ERROR = "_bg_job.pkl", "_bg_error.pkl"


def _child_env() -> dict[str, str]:
    """Give a child's environment: this package importable as the parent imports it."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])  # the folder holding the package
    sites = {str(Path(p).resolve()) for p in [*site.getsitepackages(), site.getusersitepackages()]}
    if root not in sites:  # a source checkout (an installed package is found without help)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return env


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
        job = {
            "cfg": cfg,
            "name": name,
            "deps": {k: str(v) for k, v in deps.items()},
            "work": str(work),
            "parent": os.getpid(),
        }
        (work / _JOB).write_bytes(pickle.dumps(job))
        # the child's stderr (its traceback, warnings) goes to a temporary file, not the cache
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in result()/kill()
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-P", "-m", "reliability.pipeline.background", str(work / _JOB)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._log,
                env=_child_env(),
            )
        except BaseException:
            self._log.close()
            raise

    def result(self) -> float:
        """Wait for the stage; give its time [s], or raise the error it ended with.

        Returns
        -------
        float
            How long the stage ran [s].
        """
        code = self._proc.wait()
        self._log.seek(0)
        tail = self._log.read()[-2000:].decode("utf-8", errors="replace").strip()
        self._log.close()
        meta = self.work / "meta.json"
        if code == 0 and meta.is_file():
            return float(json.loads(meta.read_text(encoding="utf-8"))["seconds"])
        if (self.work / _ERROR).is_file():
            raise pickle.loads((self.work / _ERROR).read_bytes())
        raise RuntimeError(
            f"stage {self.name} ended on its child process with exit code {code}: {tail}"
        )

    def kill(self) -> None:
        """Stop the child (the run failed elsewhere first, or was interrupted)."""
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        self._log.close()
        (self.work / _JOB).unlink(missing_ok=True)


def _main(job_path: str) -> int:
    from reliability.parallel import _die_with_parent
    from reliability.pipeline.cache import run_stage

    job = pickle.loads(Path(job_path).read_bytes())
    Path(job_path).unlink()  # read: nothing of the job stays in the cache folder
    _die_with_parent(job["parent"])
    work = Path(job["work"])
    try:
        run_stage(job["cfg"], job["name"], job["deps"], job["work"])
    except BaseException as exc:  # handed to the parent, which raises it
        text = "".join(traceback.format_exception(exc))
        sys.stderr.write(text)
        exc.add_note(f"(stage {job['name']} ran on a child process; its traceback:)\n{text}")
        try:
            blob = pickle.dumps(exc)
            pickle.loads(blob)
        except Exception:
            blob = pickle.dumps(
                RuntimeError(f"stage {job['name']}: {type(exc).__name__}: {exc}\n{text}")
            )
        (work / _ERROR).write_bytes(blob)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1]))

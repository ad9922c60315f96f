"""What the layers above the readers use of ``reliability.ingest`` besides the readers.

The store checks times given by hand against the readers' year range, refuses an input given
to the wrong reader by what its first lines are, and collapses runs of equal rows the way the
readers do; it imports these from here and nothing of the readers' private modules.

- :data:`YEAR_MIN`, :data:`YEAR_MAX`: the calendar years accepted for any timestamp;
- :func:`input_kind`: the reader (CLI kind) the start of a file is for, and what it is;
- :func:`first_of_runs`: flag the first row of each run of equal columns in a sorted frame.
"""

from __future__ import annotations

from reliability.ingest._bounds import YEAR_MAX, YEAR_MIN
from reliability.ingest._common import first_of_runs
from reliability.ingest._kind import input_kind

__all__ = ["YEAR_MAX", "YEAR_MIN", "first_of_runs", "input_kind"]

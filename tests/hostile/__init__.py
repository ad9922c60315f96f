"""Hostile-input corpus for the readers (issue 16).

- :mod:`hostile.samples`: clean, seeded samples of every input format, each record tagged
  with the lines it spans and its *unit* (the node, job or component its output rows
  belong to), so that a test can check that mutating one record changes no other record's
  output.
- :mod:`hostile.cases`: crafted hostile inputs (stray quotes, DCGM phantom events, UTF-16
  logs, unparsable Xid lines, poison values, deep JSON, wrong shapes...), each with the
  outcome known by construction (records read, kept, which lines are quarantined).
- :mod:`hostile.mutations`: hypothesis strategies for mutations of records and files
  (byte flips, truncation, inserted lines, quotes, huge numbers, encodings, hostile JSON
  values).
- :mod:`hostile.oracles`: an independent strict parse of each sample's records (issue 37):
  the rows each reader must keep for a record that kept its form, none for one with a value
  no reader may keep.

``python -m hostile`` (from ``tests/``) runs the crafted cases and the mutation corpus and
prints the inputs tried, tracebacks and silent drops.
"""

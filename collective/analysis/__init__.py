"""Scores (Υ and its estimators) and the analysis tables of a sweep's dataset, in layers, each importing only
those below it:

- `scores`: R̄, Υ and the Legg-Hutter Υ, streamed while a sweep plays (evaluate imports it);
- `base` (the table type, the identifiers of cells, environments and reference groups), `inference`
  (intervals, paired differences, Holm) and `cluster_robust` (OLS with CR2 errors, slopes); `dataset`
  (reading sweeps) and `factors` (what a table is grouped by);
- one module per family of tables: `upsilon`, `comparisons`, `communication`, `focal`, `regression`,
  `replication`, `pgi`, `learning`; then `validity`, whose checks read the regression and the sham table;
- `report`: every table of a dataset in display order, and its text, CSV, JSON and Markdown forms.
"""

"""Analysis of mempath HDF5 results: load runs, model link peaks, write the report.

Entry point: ``python -m analysis report RUN.h5 [RUN2.h5 ...] -o DIR [--peaks FILE]``
(docs/analysis.md). Reads only HDF5 (docs/schema.md), never the binaries' stdout.
"""

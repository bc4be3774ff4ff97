"""Run-to-run comparison (`python -m analysis compare BASE RUN`)."""

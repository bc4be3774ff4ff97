"""The fleet simulator and its studies, for tests and benchmarks of `analysis fleet`
(docs/fleet.md): synthetic nodes (sim), the vetting preset's plan (preset), run-to-run
noise fitted from real runs (noise) and the detection study (study). It reads the
repository's topology fixtures, so it is a tool of the checkout and never shipped with
mempath-analysis; it imports the analysis, the analysis never imports it."""

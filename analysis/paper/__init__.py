"""The paper (`python -m analysis paper RUNS -o DIR`): one figure per figure and one table
per table of the Alps GH200 study, drawn from result files, with the published values beside
this run's (docs/paper.md)."""

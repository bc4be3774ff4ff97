"""Fleet acceptance: the fleet table of every node's results (table), the night's verdicts
(verdicts), the history database and its trends (history, history_cli) and the simulator of
synthetic fleets for tests (sim). Nothing below this package imports it."""

"""Fleet acceptance: the fleet table of every node's results (table), the night's verdicts
(verdicts), the history database and its trends (history, history_cli). Nothing below this
package imports it; the simulator of synthetic fleets that tests it is a repository tool
(tests/fleetsim), not part of it."""

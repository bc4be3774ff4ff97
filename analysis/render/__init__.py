"""Drawing and writing, shared by the node report, the paper and the fleet: the one
table writer (tables), the figure style and helpers (figures), the static HTML page
(html, templates/)."""

"""The figures and tables of the paper, each registered once as an item (render/items.py):
the paper (analysis/paper) draws every one of them, the node report (analysis/report) the
ones its list of item keys names. Below report and paper, so that both import it."""

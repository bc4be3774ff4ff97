"""The node report (`python -m analysis report`): one module per section registered in
sections.py, written into a folder by write.py."""

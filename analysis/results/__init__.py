"""Reading result files: HDF5 tables into pandas (io), which cases stand for a path
(cases, transfers), the kinds and families tables shared with C++ (kinds, families,
schema), and the Python writer of the
same file layout (h5writer). Imports nothing else of analysis but errors."""

#pragma once
// Reads back what core/results.cpp (and analysis/h5writer.py) write (docs/schema.md): the
// root attributes and every table, a group of equally long 1-D datasets, one per column.
// For `mempath export`; the analysis reads the same files with h5py.
#include <map>
#include <string>

#include "core/results.hpp"

namespace mempath {

struct StoredRun {
  std::map<std::string, Attribute> attributes;
  // "bw/cases" -> its columns in name order (HDF5's and h5py's order), units included.
  std::map<std::string, Table> tables;
};

// UsageError (one line) for a missing or unreadable file, a file that is not HDF5, and one
// whose tables are not of that shape (a column of another type or length).
StoredRun read_run(const std::string& path);

}  // namespace mempath

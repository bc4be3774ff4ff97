#pragma once
// Reads back what core/results.cpp (and analysis/h5writer.py) write (docs/schema.md): the
// root attributes and every table, a group of equally long 1-D datasets, one per column.
// For `mempath export`; the analysis reads the same files with h5py through
// analysis/results/io.py, which checks the same things in the same order.
#include <cstddef>
#include <map>
#include <string>

#include "core/results.hpp"

namespace mempath {

struct StoredRun {
  std::map<std::string, Attribute> attributes;
  // "bw/cases" -> its columns in name order (HDF5's and h5py's order), units included.
  std::map<std::string, Table> tables;
};

// UsageError (one line: what is wrong, what is valid) for a missing or unreadable file, a
// file that is not HDF5, one that is not a mempath result (no schema_version attribute, or
// a tool other than mempath), one of another schema_version, one with a soft, external or
// repeated link (a link cycle, another file), and one whose tables are not of the schema's
// shape (a column of another type or length, an attribute that is not one number or text).
// Every text (names, attributes, cells, units) is valid UTF-8: see valid_utf8.
StoredRun read_run(const std::string& path);

// The same checks on a file held in memory (`name` only names it in messages): the entry
// for a fuzz driver, which hands it arbitrary bytes. Never reads or writes a file.
StoredRun read_run_image(const void* data, size_t size, const std::string& name);

// The run as one JSON document: {"attributes": {...}, "tables": {"bw/cases": {"units":
// {column: units}, "rows": [{column: value}]}}} for the tables `names` (`mempath export`'s
// json; mempath-mpi's machines' conditions); a NaN is null.
std::string run_json(const StoredRun& run, const std::vector<std::string>& names);

// The text policy of every reader of result files (docs/schema.md): valid UTF-8 passes
// unchanged, each byte that is not part of a valid UTF-8 sequence becomes the four
// characters \xNN (Python's errors="backslashreplace", as analysis/results/io.py decodes).
std::string valid_utf8(const std::string& bytes);

// `text` for a message of one line: valid_utf8, control characters as \xNN.
std::string printable(const std::string& text);

}  // namespace mempath

// `mempath export RUN.h5`: a result file as CSV or JSON, for people and tools that do not
// read HDF5 (docs/cli.md). The file is read back by core/result_reader.
#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/error.hpp"
#include "core/json_writer.hpp"
#include "core/options.hpp"
#include "core/result_reader.hpp"

namespace mempath {
namespace {

std::vector<OptionSpec> export_option_specs() {
  return {
      {"format", "csv|json", "csv (default): a file per table in a folder, or --table's one; json: one document"},
      {"table", "NAME", "only this table (bw/cases, memcpy/samples, ...)"},
      {"output", "FILE|-", "also -o; - (stdout) by default for json and one csv table; a folder (default "
                           "RUN_csv) for every table as csv"},
      {"overwrite", "", "replace an existing output"},
  };
}

// RFC 4180: a cell with a separator, quote or line break is quoted, its quotes doubled.
std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char ch : text) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return quoted + "\"";
}

// Exact doubles (they round-trip); NaN, "does not exist" in the schema, is an empty cell.
std::string number(double v) {
  if (std::isnan(v)) return "";
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

std::string csv(const Table& table) {
  std::string text;
  const auto& columns = table.columns();
  for (size_t c = 0; c < columns.size(); ++c) text += (c ? "," : "") + csv_cell(columns[c].name);
  text += "\n";
  for (size_t r = 0; r < table.rows(); ++r) {
    for (size_t c = 0; c < columns.size(); ++c) {
      if (c) text += ",";
      switch (columns[c].type) {
        case ColumnType::Int: text += std::to_string(table.ints(c)[r]); break;
        case ColumnType::Float: text += number(table.floats(c)[r]); break;
        case ColumnType::String: text += csv_cell(table.strings(c)[r]); break;
      }
    }
    text += "\n";
  }
  return text;
}

// {"attributes": {...}, "tables": {"bw/cases": {"units": {column: units}, "rows": [{...}]}}}
std::string json(const StoredRun& run, const std::vector<std::string>& names) {
  JsonWriter w;
  w.begin_object().key("attributes").begin_object();
  for (const auto& [name, value] : run.attributes) {
    w.key(name);
    if (const auto* i = std::get_if<int64_t>(&value)) w.value(static_cast<long long>(*i));
    else w.value(std::get<std::string>(value));
  }
  w.end_object().key("tables").begin_object();
  for (const auto& name : names) {
    const Table& table = run.tables.at(name);
    const auto& columns = table.columns();
    w.key(name).begin_object().key("units").begin_object();
    for (const auto& c : columns) w.key(c.name).value(c.units);
    w.end_object().key("rows").begin_array();
    for (size_t r = 0; r < table.rows(); ++r) {
      w.begin_object();
      for (size_t c = 0; c < columns.size(); ++c) {
        w.key(columns[c].name);
        switch (columns[c].type) {
          case ColumnType::Int: w.value(static_cast<long long>(table.ints(c)[r])); break;
          case ColumnType::Float: w.value(table.floats(c)[r]); break;
          case ColumnType::String: w.value(table.strings(c)[r]); break;
        }
      }
      w.end_object();
    }
    w.end_array().end_object();
  }
  w.end_object().end_object();
  return w.str() + "\n";
}

bool exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

void refuse_existing(const std::string& path, bool overwrite) {
  if (exists(path) && !overwrite) throw UsageError("'" + path + "' exists; --overwrite replaces it");
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw std::runtime_error("cannot write '" + path + "': " + std::strerror(errno));
}

void make_folder(const std::string& path) {
  if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
    throw UsageError("cannot create folder '" + path + "': " + std::strerror(errno));
}

// Every table as FOLDER/GROUP/NAME.csv: the HDF5 paths, so a name never collides.
void write_csv_folder(const StoredRun& run, const std::vector<std::string>& names, const std::string& folder,
                      bool overwrite) {
  refuse_existing(folder, overwrite);
  make_folder(folder);
  for (const auto& name : names) {
    const std::vector<std::string> parts = split_list(name, '/');
    std::string path = folder;
    for (size_t p = 0; p + 1 < parts.size(); ++p) make_folder(path += "/" + parts[p]);
    write_file(path + "/" + parts.back() + ".csv", csv(run.tables.at(name)));
  }
}

std::string without_h5(const std::string& path) {
  const std::string ext = ".h5";
  return path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0
             ? path.substr(0, path.size() - ext.size())
             : path;
}

}  // namespace

int cmd_export(const std::vector<std::string>& args) {
  Options opts("export", "Writes the tables of a result file, its first argument, as CSV or JSON\n"
                         "(docs/cli.md):\n"
                         "  mempath export RUN.h5 [--format csv|json] [--table NAME] [-o FILE|-]",
               export_option_specs());
  std::vector<std::string> rest;
  std::string input;
  for (const auto& a : args) {
    if (input.empty() && rest.empty() && !a.empty() && a[0] != '-') input = a;
    else rest.push_back(a == "-o" ? "--output" : a);
  }
  if (!opts.parse(rest)) return kExitOk;
  if (input.empty()) throw UsageError("name the result file first: mempath export RUN.h5 [options]");
  const std::string format = opts.choice("format", {"csv", "json"}, "csv");
  const StoredRun run = read_run(input);
  std::vector<std::string> names;
  if (auto table = opts.get("table")) {
    if (!run.tables.count(*table)) {
      std::vector<std::string> known;
      for (const auto& [name, t] : run.tables) known.push_back(name);
      throw UsageError("no table '" + *table + "' in '" + input + "'; it has: " +
                       (known.empty() ? std::string("none") : join(known)));
    }
    names.push_back(*table);
  } else {
    for (const auto& [name, t] : run.tables) names.push_back(name);
  }
  const bool overwrite = opts.flag("overwrite");
  if (format == "csv" && !opts.has("table")) {
    const std::string folder = opts.get_or("output", without_h5(input) + "_csv");
    if (folder == "-") throw UsageError("csv of every table goes to a folder; name one table with --table for stdout");
    write_csv_folder(run, names, folder, overwrite);
    std::cerr << "mempath: " << names.size() << " tables written to " << folder << "/\n";
    return kExitOk;
  }
  const std::string text = format == "csv" ? csv(run.tables.at(names.front())) : json(run, names);
  const std::string output = opts.get_or("output", "-");
  if (output == "-") {
    std::cout << text << std::flush;
    return kExitOk;
  }
  refuse_existing(output, overwrite);
  write_file(output, text);
  return kExitOk;
}

}  // namespace mempath

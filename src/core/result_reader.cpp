#include "core/result_reader.hpp"

#include <hdf5.h>
#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/error.hpp"

namespace mempath {

namespace {

// RAII for an HDF5 identifier: every id is closed on every way out, errors included.
struct Id {
  hid_t id;
  herr_t (*close)(hid_t);
  Id(hid_t i, herr_t (*c)(hid_t)) : id(i), close(c) {}
  ~Id() {
    if (id >= 0) close(id);
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  operator hid_t() const { return id; }
};

// Errors name the file: the reader is handed it by a person on the command line.
struct Reader {
  std::string path;
  [[noreturn]] void fail(const std::string& what) const {
    throw UsageError("cannot read '" + path + "' as a mempath result: " + what);
  }

  std::vector<std::string> children(hid_t group) const {
    std::vector<std::string> names;
    auto collect = [](hid_t, const char* name, const H5L_info_t*, void* out) -> herr_t {
      static_cast<std::vector<std::string>*>(out)->push_back(name);
      return 0;
    };
    if (H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect, &names) < 0) fail("cannot list a group");
    return names;
  }

  Id utf8_type() const {
    Id type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(type, H5T_VARIABLE);
    H5Tset_cset(type, H5T_CSET_UTF8);
    return Id(H5Tcopy(type), H5Tclose);
  }

  // A scalar string attribute, variable or fixed length.
  std::string string_of(hid_t object, hid_t type, bool attribute, size_t count, std::vector<std::string>& out) const {
    out.clear();
    if (H5Tis_variable_str(type) > 0) {
      std::vector<char*> data(count, nullptr);
      Id mem = utf8_type();
      const herr_t read = attribute ? H5Aread(object, mem, data.data())
                                    : H5Dread(object, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data());
      if (read < 0) return "cannot read strings";
      for (char* s : data) out.emplace_back(s ? s : "");
      for (char* s : data) std::free(s);  // HDF5 allocated them with the C library's malloc
      return "";
    }
    const size_t width = H5Tget_size(type);
    std::vector<char> data(width * count + 1, '\0');
    Id mem(H5Tcopy(type), H5Tclose);
    const herr_t read = attribute ? H5Aread(object, mem, data.data())
                                  : H5Dread(object, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data());
    if (read < 0) return "cannot read strings";
    for (size_t i = 0; i < count; ++i) out.emplace_back(data.data() + i * width, strnlen(data.data() + i * width, width));
    return "";
  }

  Attribute attribute(hid_t object, const std::string& name) const {
    Id attr(H5Aopen(object, name.c_str(), H5P_DEFAULT), H5Aclose);
    Id type(H5Aget_type(attr), H5Tclose);
    if (attr < 0 || type < 0) fail("cannot open attribute " + name);
    switch (H5Tget_class(type)) {
      case H5T_INTEGER: {
        int64_t v = 0;
        if (H5Aread(attr, H5T_NATIVE_INT64, &v) < 0) fail("cannot read attribute " + name);
        return v;
      }
      case H5T_FLOAT: {  // not written by mempath; kept readable as text rather than lost
        double v = 0;
        if (H5Aread(attr, H5T_NATIVE_DOUBLE, &v) < 0) fail("cannot read attribute " + name);
        char text[32];
        std::snprintf(text, sizeof text, "%.17g", v);
        return std::string(text);
      }
      case H5T_STRING: {
        std::vector<std::string> out;
        const std::string error = string_of(attr, type, true, 1, out);
        if (!error.empty()) fail(error + " of attribute " + name);
        return out.front();
      }
      default: fail("attribute " + name + " is neither a number nor a string");
    }
  }

  std::map<std::string, Attribute> attributes(hid_t object) const {
    std::vector<std::string> names;
    auto collect = [](hid_t, const char* name, const H5A_info_t*, void* out) -> herr_t {
      static_cast<std::vector<std::string>*>(out)->push_back(name);
      return 0;
    };
    if (H5Aiterate2(object, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect, &names) < 0) fail("cannot list attributes");
    std::map<std::string, Attribute> found;
    for (const auto& n : names) found[n] = attribute(object, n);
    return found;
  }

  // One column: its spec and its cells appended to `cells` (one per row).
  ColumnSpec column(hid_t group, const std::string& table, const std::string& name, std::vector<Cell>& cells) const {
    const std::string where = table + "/" + name;
    Id data(H5Dopen2(group, name.c_str(), H5P_DEFAULT), H5Dclose);
    Id space(H5Dget_space(data), H5Sclose);
    Id type(H5Dget_type(data), H5Tclose);
    if (data < 0 || space < 0 || type < 0) fail("cannot open " + where);
    if (H5Sget_simple_extent_ndims(space) != 1) fail(where + " is not one column (1-D)");
    hsize_t n = 0;
    H5Sget_simple_extent_dims(space, &n, nullptr);
    std::string units;
    if (H5Aexists(data, "units") > 0) {
      const Attribute u = attribute(data, "units");
      if (const auto* s = std::get_if<std::string>(&u)) units = *s;
    }
    ColumnSpec spec{name, ColumnType::Float, units};
    switch (H5Tget_class(type)) {
      case H5T_INTEGER: {
        spec.type = ColumnType::Int;
        std::vector<int64_t> v(n);
        if (n && H5Dread(data, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) < 0) fail("cannot read " + where);
        cells.assign(v.begin(), v.end());
        break;
      }
      case H5T_FLOAT: {
        std::vector<double> v(n);
        if (n && H5Dread(data, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) < 0) fail("cannot read " + where);
        cells.assign(v.begin(), v.end());
        break;
      }
      case H5T_STRING: {
        spec.type = ColumnType::String;
        std::vector<std::string> v;
        if (n) {
          const std::string error = string_of(data, type, false, n, v);
          if (!error.empty()) fail(error + " of " + where);
        }
        cells.assign(v.begin(), v.end());
        break;
      }
      default: fail(where + " is neither numbers nor strings");
    }
    return spec;
  }

  // A group of datasets is a table; a group of groups holds tables ("bw" of "bw/cases").
  void tables(hid_t group, const std::string& prefix, std::map<std::string, Table>& out) const {
    std::vector<ColumnSpec> specs;
    std::vector<std::vector<Cell>> columns;
    for (const auto& name : children(group)) {
      const std::string full = prefix.empty() ? name : prefix + "/" + name;
      Id sub(H5Gopen2(group, name.c_str(), H5P_DEFAULT), H5Gclose);
      if (sub >= 0) {
        tables(sub, full, out);
        continue;
      }
      columns.emplace_back();
      specs.push_back(column(group, prefix, name, columns.back()));
      if (columns.back().size() != columns.front().size())
        fail(prefix + "'s columns differ in length (" + specs.front().name + ", " + name + ")");
    }
    if (specs.empty()) return;
    if (prefix.empty()) fail("a dataset at the top level, outside any table");
    Table table(specs);
    for (size_t r = 0; r < columns.front().size(); ++r) {
      Row row;
      for (size_t c = 0; c < specs.size(); ++c) row[specs[c].name] = columns[c][r];
      table.append(row);
    }
    out.emplace(prefix, std::move(table));
  }
};

}  // namespace

StoredRun read_run(const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // one line of ours, not HDF5's error stack
  const Reader reader{path};
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) throw UsageError("'" + path + "': " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw UsageError("'" + path + "' is not a file");
  if (H5Fis_hdf5(path.c_str()) <= 0) throw UsageError("'" + path + "' is not an HDF5 file");
  Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (file < 0) reader.fail("HDF5 cannot open it");
  StoredRun run;
  run.attributes = reader.attributes(file);
  Id root(H5Gopen2(file, "/", H5P_DEFAULT), H5Gclose);
  reader.tables(root, "", run.tables);
  return run;
}

}  // namespace mempath

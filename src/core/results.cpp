#include "core/results.hpp"

#include <hdf5.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>

#include "core/error.hpp"

namespace mempath {

Table::Table(std::vector<ColumnSpec> columns)
    : columns_(std::move(columns)),
      ints_(columns_.size()),
      floats_(columns_.size()),
      strings_(columns_.size()) {}

void Table::append(const Row& row) {
  if (row.size() != columns_.size())
    throw std::logic_error("row has " + std::to_string(row.size()) + " cells, table has " +
                           std::to_string(columns_.size()) + " columns");
  for (size_t c = 0; c < columns_.size(); ++c) {
    auto it = row.find(columns_[c].name);
    if (it == row.end()) throw std::logic_error("row lacks column " + columns_[c].name);
    const Cell& cell = it->second;
    switch (columns_[c].type) {
      case ColumnType::Int:
        if (!std::holds_alternative<int64_t>(cell)) throw std::logic_error(columns_[c].name + " is int64");
        break;
      case ColumnType::Float:
        if (!std::holds_alternative<double>(cell)) throw std::logic_error(columns_[c].name + " is float64");
        break;
      case ColumnType::String:
        if (!std::holds_alternative<std::string>(cell)) throw std::logic_error(columns_[c].name + " is a string");
        break;
    }
  }
  for (size_t c = 0; c < columns_.size(); ++c) {
    const Cell& cell = row.at(columns_[c].name);
    switch (columns_[c].type) {
      case ColumnType::Int: ints_[c].push_back(std::get<int64_t>(cell)); break;
      case ColumnType::Float: floats_[c].push_back(std::get<double>(cell)); break;
      case ColumnType::String: strings_[c].push_back(std::get<std::string>(cell)); break;
    }
  }
  ++rows_;
}

ResultFile::ResultFile(std::string path, std::map<std::string, Attribute> attributes)
    : path_(std::move(path)), attributes_(std::move(attributes)) {
  attributes_["schema_version"] = kSchemaVersion;
  std::ofstream probe(path_ + ".tmp");
  if (!probe)
    throw UsageError("cannot write the output file '" + path_ +
                     "'; give --output a path in a writable folder");
  probe.close();
  std::remove((path_ + ".tmp").c_str());
}

Table& ResultFile::table(const std::string& name, const std::vector<ColumnSpec>& columns) {
  auto it = tables_.find(name);
  if (it == tables_.end()) it = tables_.emplace(name, Table(columns)).first;
  return it->second;
}

void ResultFile::set_attribute(const std::string& name, Attribute value) {
  attributes_[name] = std::move(value);
}

namespace {

// RAII for HDF5 identifiers: every id is closed on every path out of save().
struct Id {
  hid_t id;
  herr_t (*close)(hid_t);
  Id(hid_t i, herr_t (*c)(hid_t), const std::string& what) : id(i), close(c) {
    if (id < 0) throw std::runtime_error("HDF5: cannot " + what);
  }
  ~Id() { close(id); }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  operator hid_t() const { return id; }
};

Id utf8_string_type() {
  Id type(H5Tcopy(H5T_C_S1), H5Tclose, "copy string type");
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  return Id(H5Tcopy(type), H5Tclose, "copy string type");
}

void check(herr_t status, const std::string& what) {
  if (status < 0) throw std::runtime_error("HDF5: cannot " + what);
}

void write_string_attribute(hid_t object, const std::string& name, const std::string& value) {
  Id type = utf8_string_type();
  Id space(H5Screate(H5S_SCALAR), H5Sclose, "create scalar space");
  Id attr(H5Acreate2(object, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose,
          "create attribute " + name);
  const char* data = value.c_str();
  check(H5Awrite(attr, type, &data), "write attribute " + name);
}

void write_int_attribute(hid_t object, const std::string& name, int64_t value) {
  Id space(H5Screate(H5S_SCALAR), H5Sclose, "create scalar space");
  Id attr(H5Acreate2(object, name.c_str(), H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT),
          H5Aclose, "create attribute " + name);
  check(H5Awrite(attr, H5T_NATIVE_INT64, &value), "write attribute " + name);
}

hid_t create_group_path(hid_t file, const std::string& path) {
  // Intermediate groups ("bw" of "bw/samples") are created as needed.
  Id props(H5Pcreate(H5P_LINK_CREATE), H5Pclose, "create link properties");
  H5Pset_create_intermediate_group(props, 1);
  return H5Gcreate2(file, path.c_str(), props, H5P_DEFAULT, H5P_DEFAULT);
}

void write_column(hid_t group, const Table& table, size_t c) {
  const ColumnSpec& spec = table.columns()[c];
  hsize_t dims[1] = {table.rows()};
  Id space(H5Screate_simple(1, dims, nullptr), H5Sclose, "create dataspace");
  hid_t file_type = H5T_IEEE_F64LE, mem_type = H5T_NATIVE_DOUBLE;
  Id strings = utf8_string_type();
  if (spec.type == ColumnType::Int) file_type = H5T_STD_I64LE, mem_type = H5T_NATIVE_INT64;
  if (spec.type == ColumnType::String) file_type = strings, mem_type = strings;
  Id dataset(H5Dcreate2(group, spec.name.c_str(), file_type, space, H5P_DEFAULT, H5P_DEFAULT,
                        H5P_DEFAULT),
             H5Dclose, "create dataset " + spec.name);
  if (table.rows() > 0) {
    const void* data = nullptr;
    std::vector<const char*> pointers;
    if (spec.type == ColumnType::Int) data = table.ints(c).data();
    if (spec.type == ColumnType::Float) data = table.floats(c).data();
    if (spec.type == ColumnType::String) {
      for (const auto& s : table.strings(c)) pointers.push_back(s.c_str());
      data = pointers.data();
    }
    check(H5Dwrite(dataset, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), "write " + spec.name);
  }
  write_string_attribute(dataset, "units", spec.units);
}

}  // namespace

void ResultFile::save() const {
  const std::string tmp = path_ + ".tmp";
  {
    Id file(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose,
            "create " + tmp);
    for (const auto& [name, value] : attributes_) {
      if (std::holds_alternative<int64_t>(value))
        write_int_attribute(file, name, std::get<int64_t>(value));
      else
        write_string_attribute(file, name, std::get<std::string>(value));
    }
    for (const auto& [name, table] : tables_) {
      Id group(create_group_path(file, name), H5Gclose, "create group " + name);
      for (size_t c = 0; c < table.columns().size(); ++c) write_column(group, table, c);
    }
    check(H5Fflush(file, H5F_SCOPE_GLOBAL), "flush " + tmp);
  }
  if (std::rename(tmp.c_str(), path_.c_str()) != 0)
    throw std::runtime_error("cannot rename " + tmp + " to " + path_);
}

}  // namespace mempath

#include "core/result_reader.hpp"

#include <hdf5.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <set>
#include <stdexcept>
#include <vector>

#include "core/error.hpp"
#include "core/json_writer.hpp"

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

// mempath writes /FAMILY/TABLE; deeper groups are not of the schema, and a bound keeps a
// hostile file from exhausting the stack.
constexpr int kMaxDepth = 8;

// An object's identity in its file: HDF5 1.12 names objects by token, 1.10 by address.
#if H5_VERSION_GE(1, 12, 0)
using LinkInfo = H5L_info2_t;
std::string identity(const H5O_token_t& token) { return std::string(reinterpret_cast<const char*>(&token), sizeof token); }
std::string identity_of(const LinkInfo& info) { return identity(info.u.token); }
herr_t object_identity(hid_t object, std::string& out) {
  H5O_info2_t info{};
  const herr_t status = H5Oget_info3(object, &info, H5O_INFO_BASIC);
  out = identity(info.token);
  return status;
}
herr_t iterate(hid_t group, H5L_iterate2_t op, void* data) {
  return H5Literate2(group, H5_INDEX_NAME, H5_ITER_INC, nullptr, op, data);
}
#else
using LinkInfo = H5L_info_t;
std::string identity_of(const LinkInfo& info) { return std::to_string(info.u.address); }
herr_t object_identity(hid_t object, std::string& out) {
  H5O_info_t info{};
  const herr_t status = H5Oget_info2(object, &info, H5O_INFO_BASIC);
  out = std::to_string(info.addr);
  return status;
}
herr_t iterate(hid_t group, H5L_iterate_t op, void* data) {
  return H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, nullptr, op, data);
}
#endif

struct Link {
  std::string name;  // as stored: what HDF5 opens it by
  H5L_type_t type;
  std::string target;  // identity of a hard link's object
};

// Errors name the file: the reader is handed it by a person on the command line.
struct Reader {
  std::string path;
  std::set<std::string> seen;  // identities of the objects reached, the root included

  [[noreturn]] void fail(const std::string& what) const {
    throw UsageError("cannot read '" + printable(path) + "' as a mempath result: " + what);
  }

  std::vector<Link> links(hid_t group) const {
    std::vector<Link> found;
    auto collect = [](hid_t, const char* name, const LinkInfo* info, void* out) -> herr_t {
      auto& links = *static_cast<std::vector<Link>*>(out);
      links.push_back({name, info->type, info->type == H5L_TYPE_HARD ? identity_of(*info) : std::string()});
      return 0;
    };
    if (iterate(group, collect, &found) < 0) fail("cannot list a group");
    return found;
  }

  // A scalar string attribute or a column of strings, variable or fixed length.
  std::string string_of(hid_t object, hid_t type, bool attribute, size_t count, std::vector<std::string>& out) const {
    out.clear();
    if (H5Tis_variable_str(type) > 0) {
      std::vector<char*> data(count, nullptr);
      Id mem(H5Tcopy(type), H5Tclose);  // the file's character set: HDF5 does not convert them
      const herr_t read = attribute ? H5Aread(object, mem, data.data())
                                    : H5Dread(object, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data());
      if (read < 0) return "cannot read strings";
      for (char* s : data) out.push_back(valid_utf8(s ? s : ""));
      for (char* s : data) std::free(s);  // HDF5 allocated them with the C library's malloc
      return "";
    }
    const size_t width = H5Tget_size(type);
    if (width == 0) return "strings of no width";
    std::vector<char> data(width * count + 1, '\0');
    Id mem(H5Tcopy(type), H5Tclose);
    const herr_t read = attribute ? H5Aread(object, mem, data.data())
                                  : H5Dread(object, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data());
    if (read < 0) return "cannot read strings";
    for (size_t i = 0; i < count; ++i)
      out.push_back(valid_utf8(std::string(data.data() + i * width, strnlen(data.data() + i * width, width))));
    return "";
  }

  Attribute attribute(hid_t object, const std::string& name) const {
    const std::string shown = printable(name);
    Id attr(H5Aopen(object, name.c_str(), H5P_DEFAULT), H5Aclose);
    if (attr < 0) fail("cannot open attribute " + shown);
    Id type(H5Aget_type(attr), H5Tclose);
    Id space(H5Aget_space(attr), H5Sclose);
    if (type < 0 || space < 0) fail("cannot open attribute " + shown);
    // Read into one value: an array attribute would overrun it.
    if (H5Sget_simple_extent_npoints(space) != 1) fail("attribute " + shown + " is not one value");
    switch (H5Tget_class(type)) {
      case H5T_INTEGER: {
        int64_t v = 0;
        if (H5Aread(attr, H5T_NATIVE_INT64, &v) < 0) fail("cannot read attribute " + shown);
        return v;
      }
      case H5T_FLOAT: {  // not written by mempath; kept readable as text rather than lost
        double v = 0;
        if (H5Aread(attr, H5T_NATIVE_DOUBLE, &v) < 0) fail("cannot read attribute " + shown);
        char text[32];
        std::snprintf(text, sizeof text, "%.17g", v);
        return std::string(text);
      }
      case H5T_STRING: {
        std::vector<std::string> out;
        const std::string error = string_of(attr, type, true, 1, out);
        if (!error.empty()) fail(error + " of attribute " + shown);
        return out.front();
      }
      default: fail("attribute " + shown + " is neither a number nor a string");
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
    for (const auto& n : names)
      if (!found.emplace(valid_utf8(n), attribute(object, n)).second)
        fail("two attributes named " + printable(n) + " once decoded (docs/schema.md: text)");
    return found;
  }

  // Checked before anything else is read: a file of another kind or version is refused
  // with what it is, not with the first table that does not fit.
  void identify(hid_t file) const {
    if (H5Aexists(file, "schema_version") <= 0)
      fail("no schema_version attribute, so not a mempath result file; give a file written by mempath "
           "or the analysis");
    const Attribute version = attribute(file, "schema_version");
    const auto* number = std::get_if<int64_t>(&version);
    if (!number || *number != kSchemaVersion)
      fail("schema_version " + (number ? std::to_string(*number) : printable(std::get<std::string>(version))) +
           " is not supported; this mempath reads schema_version " + std::to_string(kSchemaVersion));
    if (H5Aexists(file, "tool") > 0) {
      const Attribute tool = attribute(file, "tool");
      const auto* name = std::get_if<std::string>(&tool);
      if (!name || *name != "mempath")
        fail("its tool attribute is not 'mempath', so not a mempath result file; give a file written by "
             "mempath or the analysis");
    }
  }

  // Only hard links, each object reached once: mempath writes nothing else, and following
  // a soft link that points up, or a group hard-linked into itself, never ends.
  void check(const Link& link, const std::string& where) {
    if (link.type != H5L_TYPE_HARD) {
      const char* kind = link.type == H5L_TYPE_SOFT ? "a soft link" : link.type == H5L_TYPE_EXTERNAL
                                                                          ? "an external link (to another file)"
                                                                          : "a user-defined link";
      fail(printable(where) + " is " + kind + "; valid: groups and datasets each of one name (no soft, "
           "external or repeated links)");
    }
    if (!seen.insert(link.target).second)
      fail(printable(where) + " links to an object already reached (a link cycle or a second name); valid: "
           "groups and datasets each of one name");
  }

  // One column: its spec and its cells appended to `cells` (one per row).
  ColumnSpec column(hid_t group, const std::string& table, const std::string& raw, std::vector<Cell>& cells) const {
    const std::string name = valid_utf8(raw);
    const std::string where = printable(table + "/" + name);
    Id data(H5Dopen2(group, raw.c_str(), H5P_DEFAULT), H5Dclose);
    if (data < 0) fail("cannot open " + where);
    Id space(H5Dget_space(data), H5Sclose);
    Id type(H5Dget_type(data), H5Tclose);
    if (space < 0 || type < 0) fail("cannot open " + where);
    if (H5Sget_simple_extent_ndims(space) != 1) fail(where + " is not one column (1-D)");
    hsize_t n = 0;
    H5Sget_simple_extent_dims(space, &n, nullptr);
    // A damaged dataspace can claim any length: no column holds more cells than its file has
    // bytes (mempath writes no compressed dataset; a filtered one may hold 1024 times more),
    // so a bigger claim is refused before its buffer is allocated.
    Id plist(H5Dget_create_plist(data), H5Pclose);
    Id file(H5Iget_file_id(data), H5Fclose);
    hsize_t file_bytes = 0;
    if (plist < 0 || file < 0 || H5Fget_filesize(file, &file_bytes) < 0) fail("cannot open " + where);
    const hsize_t cell_bytes = std::max<hsize_t>(1, H5Tget_size(type));
    const hsize_t room = (H5Pget_nfilters(plist) > 0 ? 1024 : 1) * std::max<hsize_t>(file_bytes, 1);
    if (n > room / cell_bytes)
      fail(where + " claims " + std::to_string(n) + " cells, more than its file can hold; the file is damaged");
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
  void tables(hid_t group, const std::string& prefix, int depth, std::map<std::string, Table>& out) {
    if (depth > kMaxDepth) fail("groups nested deeper than " + std::to_string(kMaxDepth) + " (" + printable(prefix) + ")");
    std::vector<ColumnSpec> specs;
    std::vector<std::vector<Cell>> columns;
    std::set<std::string> names;
    for (const Link& link : links(group)) {
      const std::string name = valid_utf8(link.name);
      const std::string full = prefix.empty() ? name : prefix + "/" + name;
      check(link, full);
      H5O_type_t kind = H5O_TYPE_UNKNOWN;
      {
        Id object(H5Oopen(group, link.name.c_str(), H5P_DEFAULT), H5Oclose);
        if (object < 0) fail("cannot open " + printable(full));
        const H5I_type_t id_type = H5Iget_type(object);
        kind = id_type == H5I_GROUP ? H5O_TYPE_GROUP : id_type == H5I_DATASET ? H5O_TYPE_DATASET : H5O_TYPE_NAMED_DATATYPE;
      }
      if (!names.insert(name).second) fail("two members of " + printable(prefix) + " named " + printable(name) + " once decoded");
      if (kind == H5O_TYPE_GROUP) {
        Id sub(H5Gopen2(group, link.name.c_str(), H5P_DEFAULT), H5Gclose);
        if (sub < 0) fail("cannot open " + printable(full));
        tables(sub, full, depth + 1, out);
        continue;
      }
      if (kind != H5O_TYPE_DATASET) fail(printable(full) + " is neither a group nor a dataset");
      columns.emplace_back();
      specs.push_back(column(group, prefix, link.name, columns.back()));
      if (columns.back().size() != columns.front().size())
        fail(printable(prefix) + "'s columns differ in length (" + printable(specs.front().name) + ", " + printable(name) + ")");
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

  StoredRun read(hid_t file) {
    identify(file);
    StoredRun run;
    run.attributes = attributes(file);
    Id root(H5Gopen2(file, "/", H5P_DEFAULT), H5Gclose);
    std::string self;
    if (root < 0 || object_identity(root, self) < 0) fail("cannot open its root group");
    seen.insert(self);
    try {
      tables(root, "", 0, run.tables);
    } catch (const std::bad_alloc&) {
      fail("a column too long to hold in memory");
    } catch (const std::length_error&) {
      fail("a column too long to hold in memory");
    }
    return run;
  }
};

// The length of the UTF-8 sequence that starts at s[i] where it is well-formed
// (Unicode 15, table 3-7: no overlongs, surrogates or values past U+10FFFF), else 0.
size_t sequence_length(const std::string& s, size_t i) {
  const auto byte = [&](size_t k) { return k < s.size() ? static_cast<unsigned char>(s[k]) : 0u; };
  const unsigned b0 = byte(i);
  const auto in = [](unsigned b, unsigned lo, unsigned hi) { return b >= lo && b <= hi; };
  if (b0 < 0x80) return 1;
  if (in(b0, 0xC2, 0xDF)) return in(byte(i + 1), 0x80, 0xBF) ? 2 : 0;
  if (in(b0, 0xE0, 0xEF)) {
    const unsigned lo = b0 == 0xE0 ? 0xA0 : 0x80, hi = b0 == 0xED ? 0x9F : 0xBF;
    return in(byte(i + 1), lo, hi) && in(byte(i + 2), 0x80, 0xBF) ? 3 : 0;
  }
  if (in(b0, 0xF0, 0xF4)) {
    const unsigned lo = b0 == 0xF0 ? 0x90 : 0x80, hi = b0 == 0xF4 ? 0x8F : 0xBF;
    return in(byte(i + 1), lo, hi) && in(byte(i + 2), 0x80, 0xBF) && in(byte(i + 3), 0x80, 0xBF) ? 4 : 0;
  }
  return 0;
}

void hex_byte(std::string& out, unsigned char c) {
  char text[5];
  std::snprintf(text, sizeof text, "\\x%02x", c);
  out += text;
}

struct Silence {  // one line of ours, not HDF5's error stack
  Silence() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }
};

}  // namespace

std::string valid_utf8(const std::string& bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    const size_t n = sequence_length(bytes, i);
    if (n == 0) {
      hex_byte(out, static_cast<unsigned char>(bytes[i]));
      ++i;
    } else {
      out.append(bytes, i, n);
      i += n;
    }
  }
  return out;
}

std::string printable(const std::string& text) {
  std::string out;
  for (char ch : valid_utf8(text)) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7F) hex_byte(out, c);
    else out += ch;
  }
  return out;
}

StoredRun read_run(const std::string& path) {
  static const Silence silence;
  Reader reader{path, {}};
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) throw UsageError("'" + printable(path) + "': " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw UsageError("'" + printable(path) + "' is not a file");
  if (H5Fis_hdf5(path.c_str()) <= 0) throw UsageError("'" + printable(path) + "' is not an HDF5 file");
  Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (file < 0) reader.fail("HDF5 cannot open it");
  return reader.read(file);
}

StoredRun read_run_image(const void* data, size_t size, const std::string& name) {
  static const Silence silence;
  Reader reader{name, {}};
  static const char signature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  if (size < sizeof signature || std::memcmp(data, signature, sizeof signature) != 0)
    throw UsageError("'" + printable(name) + "' is not an HDF5 file");
  Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  // The core driver over a copy of the bytes: HDF5 reads them and never touches a file.
  if (fapl < 0 || H5Pset_fapl_core(fapl, 1 << 16, false) < 0 || H5Pset_file_image(fapl, const_cast<void*>(data), size) < 0)
    reader.fail("HDF5 cannot take it");
  Id file(H5Fopen(name.c_str(), H5F_ACC_RDONLY, fapl), H5Fclose);
  if (file < 0) reader.fail("HDF5 cannot open it");
  return reader.read(file);
}

std::string run_json(const StoredRun& run, const std::vector<std::string>& names) {
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

}  // namespace mempath

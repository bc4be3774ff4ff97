#pragma once
// A minimal streaming JSON writer: objects, arrays, strings, numbers, bools, null.
// Commas and key/value separators are placed automatically, so callers only say what
// comes next:
//
//   JsonWriter w;
//   w.begin_object();
//   w.key("name").value("gpu0");
//   w.key("peers").begin_array().value(1).value(2).end_array();
//   w.end_object();
//   std::string doc = w.str();   // {"name":"gpu0","peers":[1,2]}
//
// Output is compact (no whitespace). Non-finite doubles become null, since JSON has no
// NaN/Inf and readers (Python json, jq) must be able to load every document we write.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace mempath {

class JsonWriter {
 public:
  JsonWriter& begin_object() { open('{'); return *this; }
  JsonWriter& end_object() { close('}'); return *this; }
  JsonWriter& begin_array() { open('['); return *this; }
  JsonWriter& end_array() { close(']'); return *this; }

  // Inside an object: the key of the next value.
  JsonWriter& key(const std::string& k) {
    separate();
    append_string(k);
    out_ += ':';
    after_key_ = true;
    return *this;
  }

  JsonWriter& value(const std::string& s) { separate(); append_string(s); return *this; }
  JsonWriter& value(const char* s) { return s ? value(std::string(s)) : null(); }
  JsonWriter& value(bool b) { return raw(b ? "true" : "false"); }
  JsonWriter& value(int v) { return raw(std::to_string(v)); }
  JsonWriter& value(long v) { return raw(std::to_string(v)); }
  JsonWriter& value(long long v) { return raw(std::to_string(v)); }
  JsonWriter& value(unsigned v) { return raw(std::to_string(v)); }
  JsonWriter& value(unsigned long v) { return raw(std::to_string(v)); }
  JsonWriter& value(unsigned long long v) { return raw(std::to_string(v)); }
  JsonWriter& value(double v) {
    if (!std::isfinite(v)) return null();
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);  // round-trips exactly
    return raw(buf);
  }
  JsonWriter& null() { return raw("null"); }

  // An int where a negative id means "none" (e.g. hbm_numa = -1 -> null).
  JsonWriter& id_or_null(long long v) { return v < 0 ? null() : value(v); }

  template <class T>
  JsonWriter& array(const std::vector<T>& items) {
    begin_array();
    for (const T& x : items) value(x);
    return end_array();
  }

  // Shorthand for key(k).value(v).
  template <class T>
  JsonWriter& field(const std::string& k, const T& v) { return key(k).value(v); }

  // Splices an already serialised JSON value (e.g. another module's document).
  JsonWriter& raw(const std::string& json) {
    separate();
    out_ += json;
    return *this;
  }

  const std::string& str() const { return out_; }

  static std::string escape(const std::string& s) {
    JsonWriter w;
    w.append_string(s);
    return w.out_;
  }

 private:
  void open(char c) {
    separate();
    out_ += c;
    first_.push_back(true);
  }
  void close(char c) {
    out_ += c;
    if (!first_.empty()) first_.pop_back();
  }
  // Comma before every element except the first of its container, none after a key.
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (first_.empty()) return;
    if (!first_.back()) out_ += ',';
    first_.back() = false;
  }
  void append_string(const std::string& s) {
    out_ += '"';
    for (unsigned char c : s) {
      switch (c) {
        case '"': out_ += "\\\""; break;
        case '\\': out_ += "\\\\"; break;
        case '\b': out_ += "\\b"; break;
        case '\f': out_ += "\\f"; break;
        case '\n': out_ += "\\n"; break;
        case '\r': out_ += "\\r"; break;
        case '\t': out_ += "\\t"; break;
        default:
          if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out_ += buf;
          } else {
            out_ += static_cast<char>(c);  // UTF-8 passes through unchanged
          }
      }
    }
    out_ += '"';
  }

  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

}  // namespace mempath

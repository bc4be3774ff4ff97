#pragma once
#include <string>

namespace mempath {

enum class Op { Read, Write, Copy };

inline const char* op_name(Op op) {
  return op == Op::Read ? "read" : op == Op::Write ? "write" : "copy";
}

}  // namespace mempath

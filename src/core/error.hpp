#pragma once
#include <stdexcept>
#include <string>

namespace mempath {

// Bad input from the user (unknown names, sizes that do not fit, options that do not
// apply to this node): the CLI prints the message as one line and exits with code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A case the node cannot run (no ATS, no peer access, no CUDA): recorded as skipped with
// this reason, never fatal.
class Unsupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Exit codes of every mempath command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;  // a case ran and failed (e.g. data verification)
inline constexpr int kExitUsage = 2;

}  // namespace mempath

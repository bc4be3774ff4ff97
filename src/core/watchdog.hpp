#pragma once
// A per-case time limit: a thread that calls `on_expiry` when an armed case runs longer
// than its limit, so that a stuck kernel or a peer that never answers ends the job with a
// reason instead of holding it until the batch system's limit.
#include <functional>
#include <string>

namespace mempath {

class Watchdog {
 public:
  // `on_expiry(what)` runs on the watchdog's thread and must not return (it ends the
  // process); seconds <= 0 disables the watchdog.
  using Expiry = std::function<void(const std::string& what)>;
  Watchdog(double seconds, Expiry on_expiry);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void arm(const std::string& what);  // a case starts
  void disarm();                      // it ended

  // Arms for the scope of one case.
  class Scope {
   public:
    Scope(Watchdog& w, const std::string& what) : w_(w) { w_.arm(what); }
    ~Scope() { w_.disarm(); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Watchdog& w_;
  };

 private:
  struct State;
  double seconds_;
  State* state_ = nullptr;
};

// "--timeout 600 s" style text for messages.
std::string timeout_text(double seconds);

}  // namespace mempath

#include "core/watchdog.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <sstream>
#include <thread>

namespace mempath {

struct Watchdog::State {
  std::mutex m;
  std::condition_variable cv;
  bool stop = false;
  bool firing = false;  // the expiry handler runs: the case must not go on touching results
  std::string what;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  Expiry on_expiry;
  std::thread thread;
};

Watchdog::Watchdog(double seconds, Expiry on_expiry) : seconds_(seconds) {
  if (seconds <= 0) return;
  state_ = new State;
  state_->on_expiry = std::move(on_expiry);
  state_->thread = std::thread([s = state_] {
    std::unique_lock<std::mutex> lock(s->m);
    while (!s->stop) {
      if (std::chrono::steady_clock::now() >= s->deadline) {
        const std::string what = s->what;
        s->firing = true;
        lock.unlock();  // the expiry handler may take other locks (the result file's)
        s->on_expiry(what);
        lock.lock();
        s->firing = false;  // a handler that returned
        s->deadline = std::chrono::steady_clock::time_point::max();
        s->cv.notify_all();
      }
      s->cv.wait_until(lock, std::min(s->deadline, std::chrono::steady_clock::now() + std::chrono::seconds(1)));
    }
  });
}

Watchdog::~Watchdog() {
  if (!state_) return;
  {
    std::lock_guard<std::mutex> lock(state_->m);
    state_->stop = true;
  }
  state_->cv.notify_all();
  state_->thread.join();
  delete state_;
}

void Watchdog::arm(const std::string& what) {
  if (!state_) return;
  std::lock_guard<std::mutex> lock(state_->m);
  state_->what = what;
  state_->deadline = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(static_cast<long long>(seconds_ * 1000));
  state_->cv.notify_all();
}

void Watchdog::disarm() {
  if (!state_) return;
  std::unique_lock<std::mutex> lock(state_->m);
  // A case that ends while its expiry is being handled waits for the process to end.
  state_->cv.wait(lock, [s = state_] { return !s->firing; });
  state_->deadline = std::chrono::steady_clock::time_point::max();
}

std::string timeout_text(double seconds) {
  std::ostringstream out;
  out << "--timeout " << seconds << " s";
  return out.str();
}

}  // namespace mempath

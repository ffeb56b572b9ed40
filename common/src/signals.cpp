// SignalDeferral (see signals.hpp).
#include "colltune/common/signals.hpp"

#include <signal.h>

#include <array>
#include <csignal>
#include <mutex>
#include <string>

#include "colltune/common/error.hpp"

namespace colltune {
namespace {

constexpr std::array<int, 3> kDeferred{SIGINT, SIGTERM, SIGHUP};

volatile std::sig_atomic_t g_pending = 0;  // the one thing the handler writes

extern "C" void note_signal(int signo) {
  if (g_pending == 0) g_pending = signo;
}

// The outermost deferral's saved actions; guarded by the mutex (deferrals may nest across
// threads, e.g. two writers in one process).
struct Saved {
  std::mutex m;
  int depth = 0;
  std::array<struct sigaction, kDeferred.size()> old{};
};
Saved& saved() {
  static Saved s;
  return s;
}

}  // namespace

SignalDeferral::SignalDeferral() {
  Saved& s = saved();
  std::lock_guard<std::mutex> lk(s.m);
  if (s.depth++ > 0) return;
  g_pending = 0;
  for (std::size_t i = 0; i < kDeferred.size(); ++i) {
    sigaction(kDeferred[i], nullptr, &s.old[i]);
    if (s.old[i].sa_handler == SIG_IGN) continue;  // nohup: stays ignored
    struct sigaction act {};
    act.sa_handler = note_signal;
    sigemptyset(&act.sa_mask);
    sigaction(kDeferred[i], &act, nullptr);
  }
}

SignalDeferral::~SignalDeferral() {
  int signo = 0;
  {
    Saved& s = saved();
    std::lock_guard<std::mutex> lk(s.m);
    if (--s.depth > 0) return;
    for (std::size_t i = 0; i < kDeferred.size(); ++i) sigaction(kDeferred[i], &s.old[i], nullptr);
    signo = g_pending;
    g_pending = 0;
  }
  // Nobody handled it: deliver it now, to whatever disposition the process had before.
  if (signo != 0) raise(signo);
}

int SignalDeferral::pending() { return g_pending; }

void SignalDeferral::die(int signo) {
  struct sigaction act {};
  act.sa_handler = SIG_DFL;
  sigemptyset(&act.sa_mask);
  sigaction(signo, &act, nullptr);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signo);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  raise(signo);
  throw Error("interrupted by signal " + std::to_string(signo));  // not reached with SIG_DFL
}

}  // namespace colltune

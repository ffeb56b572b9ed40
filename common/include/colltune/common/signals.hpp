#pragma once
// Holding off SIGINT, SIGTERM and SIGHUP while files are half-written. While a SignalDeferral
// lives, those signals only set a flag; at each checkpoint() (and at destruction) the owner
// learns whether one arrived, cleans up what it wrote, and calls die(), which ends the process
// by that same signal, so the shell sees the conventional status 128+N (130 for SIGINT, 143
// for SIGTERM). A signal the process ignored (nohup) stays ignored. Nestable: only the
// outermost deferral installs and restores the handlers.
//
// The flag is process-wide by necessity (a signal handler can reach nothing else); it is an
// async-signal-safe std::sig_atomic_t and the only state the handler touches.
namespace colltune {

class SignalDeferral {
 public:
  SignalDeferral();
  SignalDeferral(const SignalDeferral&) = delete;
  SignalDeferral& operator=(const SignalDeferral&) = delete;
  // Restores the handlers; a signal still pending is then delivered (the process dies of it)
  // unless the owner handled it through checkpoint()/die().
  ~SignalDeferral();

  // The signal that arrived since the outermost deferral began, or 0.
  static int pending();
  // Restores the default action of `signo` and raises it: the process ends by that signal.
  // Returns only if the signal does not end the process (a handler installed before us).
  [[noreturn]] static void die(int signo);
};

}  // namespace colltune

#pragma once
// Rules every colltune command follows, in one place: how integer options are read, and the
// exit statuses (docs/hardening.md).
#include <CLI/CLI.hpp>
#include <exception>

namespace colltune::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;  // colltune::CheckFailure: a check found wrong results
inline constexpr int kExitBadInput = 2;     // colltune::Error: bad input, or a run that failed (timeout)
inline constexpr int kExitInternal = 3;     // any other exception: a bug in colltune

// The exit status for an exception that ends a command.
int exit_status(const std::exception& e);

// Thrown by a command that has already said why it stops (an MPI rank other than 0, when every
// rank knows the same failure): main() exits with `code` without printing anything.
struct QuietExit {
  int code;
};

// Applied by main() to every option of every command after they are all registered: integer
// options accept plain decimal digits only (CLI11 would read "010" as octal 8 and "0x10" as
// 16), and unsigned ones refuse a minus sign (CLI11 would wrap "-1" to 2^64-1, which is how
// `bench --chunk -1`, `-f -2` and `tune --budget -1` ran with absurd values).
void apply_option_rules(CLI::App& app);

}  // namespace colltune::cli

#pragma once
// Standard output through the finite-answer check (docs/hardening.md "Finite answers"). Every
// line colltune prints, from std::cout and printf alike, goes through
// finite::non_finite_token on its way to file descriptor 1; a line with a non-finite number
// ("step time inf s", "-nan") is withheld with everything after it, and main() ends the command
// as an internal error (exit 3) instead of exit 0. JSON documents, checked as documents by
// finite::json_text (their strings may hold any word), are printed with print_checked_json.
#include <optional>
#include <string>
#include <string_view>

namespace colltune::cli {

class StdoutGuard {
 public:
  // Routes stdout and std::cout through the check, with the buffering stdout had (line
  // buffered on a terminal, fully buffered otherwise). One at a time.
  StdoutGuard();
  ~StdoutGuard();
  StdoutGuard(const StdoutGuard&) = delete;
  StdoutGuard& operator=(const StdoutGuard&) = delete;

  // Flushes everything printed so far; returns the first withheld line, if any.
  std::optional<std::string> finish();

  struct State;

 private:
  State* s_;
};

// Prints a JSON text already checked by finite::json_text, and a newline, without the line check.
void print_checked_json(std::string_view json);

}  // namespace colltune::cli

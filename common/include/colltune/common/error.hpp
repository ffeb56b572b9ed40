#pragma once
// colltune::Error is thrown for bad input: a malformed file, an unknown name, an impossible
// size or topology. Its message names what was wrong and where (file, field, value) and is
// printed by the CLI as one line before exiting with status 2. Exit statuses
// (docs/hardening.md): 0 success, 1 a check found wrong results (CheckFailure), 2 bad input or
// a failed run (Error, TimeoutError), 3 internal error (any other exception: a bug), 128+N
// ended by signal N.
#include <stdexcept>
#include <string>

namespace colltune {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A timeout while waiting for a peer: the job ends with this instead of hanging.
class TimeoutError : public Error {
 public:
  using Error::Error;
};

// A check found wrong results (the bench compared a result with its reference): the run
// completed, but what it measured cannot be trusted. Exit status 1.
class CheckFailure : public Error {
 public:
  using Error::Error;
};

}  // namespace colltune

#pragma once
// colltune::Error is thrown for bad input: a malformed file, an unknown name, an impossible
// size or topology. Its message names what was wrong and where (file, field, value) and is
// printed by the CLI as one line before exiting with status 2.
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

}  // namespace colltune

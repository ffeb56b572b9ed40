#pragma once
// The entry points shared by the libFuzzer targets (built with clang, `make fuzz`) and the
// replay driver that `make test` runs (any compiler): one per parser of outside input. Each
// feeds its bytes to the parser exactly as colltune would; bad input must end in
// colltune::Error, which the entry swallows. Any other exception escapes (libFuzzer reports it
// as a crash; the replay driver fails the test), and so does a crash or a hang.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace colltune::fuzz {

using Entry = void (*)(std::string_view input);

struct Target {
  const char* name;  // also the corpus folder: tests/fuzz/corpus/<name>/
  Entry entry;
  // Tokens the mutation pass inserts (a libFuzzer dictionary in spirit).
  std::vector<std::string_view> tokens;
  // Mutations the replay makes (COLLTUNE_FUZZ_MUTATIONS overrides it for every target): fewer
  // where each input runs a whole command (a calibration fit, a step), to stay CI-sized.
  std::size_t mutations = 3000;
};

const std::vector<Target>& targets();
const Target& find_target(std::string_view name);

// Runs `target` on the bytes; returns 0 (libFuzzer's convention) when the parser accepted the
// input or refused it with colltune::Error.
int run(const Target& target, const std::uint8_t* data, std::size_t size);
// The same, telling whether the input was accepted (and so went through the oracle).
bool accepted(const Target& target, const std::uint8_t* data, std::size_t size);

// The finite-answer oracle: throws finite::InternalError (not a colltune::Error, so the input
// counts as a failure) unless `value` is finite and >= 0.
void expect_finite(double value, const std::string& what);

}  // namespace colltune::fuzz

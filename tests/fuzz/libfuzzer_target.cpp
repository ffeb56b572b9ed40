// One libFuzzer binary per parser: COLLTUNE_FUZZ_TARGET names it (tests/fuzz/CMakeLists.txt).
#include <cstddef>
#include <cstdint>

#include "fuzz_targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const colltune::fuzz::Target& target = colltune::fuzz::find_target(COLLTUNE_FUZZ_TARGET);
  return colltune::fuzz::run(target, data, size);
}

#pragma once
// Device-side comparison of the fp16 fast path with the shared portable conversions
// (conversion_check.cu).
#include <cstdint>

namespace colltune::test {

struct Mismatches {
  unsigned long long count = 0;
  unsigned long long first = ~0ull;  // the first differing input pattern
};

// fp32 patterns [begin, end) narrowed both ways on the device.
Mismatches f32_to_f16_fast_path_mismatches(std::uint64_t begin, std::uint64_t end);
// Every fp16 pattern widened both ways on the device.
Mismatches f16_to_f32_fast_path_mismatches();

}  // namespace colltune::test

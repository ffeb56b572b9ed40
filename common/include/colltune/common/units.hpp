#pragma once
// One vocabulary for sizes and times everywhere (see docs/design.md "Units and metrics"):
// sizes are bytes in size_t, times are microseconds in double, bandwidth is GB/s = 1e9 B/s.
// Reading them is parse.hpp's (parse_size, parse_time_us, parse::rate_gbps); this is the
// writing side.
#include <cstddef>
#include <string>
#include <string_view>

#include "colltune/common/parse.hpp"  // parse_size, parse_time_us: the units read

namespace colltune {

inline constexpr std::size_t KiB = 1024;
inline constexpr std::size_t MiB = 1024 * KiB;
inline constexpr std::size_t GiB = 1024 * MiB;

// "1.76": a ratio (speedup, relative error) with three significant digits, for printing.
std::string format_ratio(double ratio);

// "0 B", "1 KiB", "64 MiB", "1.5 GiB": human-readable, exact when the size is a round unit.
std::string format_bytes(std::size_t bytes);
// "12.3 us", "4.56 ms", "1.20 s"
std::string format_time_us(double us);

// GB/s for `bytes` moved in `time_us` microseconds (0 when time is 0).
double gbps(std::size_t bytes, double time_us);

}  // namespace colltune

#pragma once
// One vocabulary for sizes and times everywhere (see docs/design.md "Units and metrics"):
// sizes are bytes in size_t, times are microseconds in double, bandwidth is GB/s = 1e9 B/s.
#include <cstddef>
#include <string>
#include <string_view>

namespace colltune {

inline constexpr std::size_t KiB = 1024;
inline constexpr std::size_t MiB = 1024 * KiB;
inline constexpr std::size_t GiB = 1024 * MiB;

// Whether a size may be a bare number of bytes. Where the option's name says bytes (nccl-tests'
// -b/-e, simulate --bytes) it may; where a bare number could as well mean KiB or MiB
// (--fusion-threshold 64, --chunk 1) a unit is required. 0 never needs one.
enum class BareNumber { bytes, refused };

// Parses "4096", "64KiB", "64MiB", "1GiB", "1.5MiB", "64MB" (decimal), "64K"/"64M"/"64G"
// (binary, as nccl-tests reads them). `what` names the argument in the error message.
// Throws colltune::Error on garbage, negative values, values that overflow size_t, and a bare
// number where `bare` refuses it (the message lists the units).
std::size_t parse_size(std::string_view text, std::string_view what, BareNumber bare = BareNumber::bytes);

// Parses "250us", "5ms", "0.1ms", "1s", "100ns" into microseconds. A unit is required (a bare
// "5" once silently meant 5 us where 5 ms was meant); only 0 may go without.
double parse_time_us(std::string_view text, std::string_view what);

// "1.76": a ratio (speedup, relative error) with three significant digits, for printing.
std::string format_ratio(double ratio);

// "0 B", "1 KiB", "64 MiB", "1.5 GiB": human-readable, exact when the size is a round unit.
std::string format_bytes(std::size_t bytes);
// "12.3 us", "4.56 ms", "1.20 s"
std::string format_time_us(double us);

// GB/s for `bytes` moved in `time_us` microseconds (0 when time is 0).
double gbps(std::size_t bytes, double time_us);

}  // namespace colltune

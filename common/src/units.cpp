#include "colltune/common/units.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "colltune/common/error.hpp"

namespace colltune {
namespace {

[[noreturn]] void bad(std::string_view what, std::string_view text, std::string_view why) {
  throw Error(std::string(what) + ": '" + std::string(text) + "' " + std::string(why));
}

// Splits "1.5MiB" into the number 1.5 and the suffix "MiB".
std::pair<double, std::string_view> split_number(std::string_view text, std::string_view what) {
  double value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || !std::isfinite(value)) bad(what, text, "is not a number with an optional unit");
  if (value < 0) bad(what, text, "must not be negative");
  return {value, std::string_view(ptr, static_cast<std::size_t>(end - ptr))};
}

}  // namespace

constexpr const char* kSizeUnits = "B, KiB, MiB, GiB, TiB, KB, MB, GB, TB or K/M/G/T";
constexpr const char* kTimeUnits = "ns, us, ms or s";

std::size_t parse_size(std::string_view text, std::string_view what, BareNumber bare) {
  if (text.empty()) bad(what, text, "is empty");
  auto [value, unit] = split_number(text, what);
  if (unit.empty() && value != 0 && bare == BareNumber::refused)
    bad(what, text, std::string("needs a unit (") + kSizeUnits + "), e.g. '" + std::string(text) + "MiB'");
  struct Unit {
    std::string_view name;
    double factor;
  };
  static constexpr std::array<Unit, 14> units{{{"", 1.0},
                                               {"B", 1.0},
                                               {"K", 1024.0},
                                               {"KiB", 1024.0},
                                               {"KB", 1e3},
                                               {"M", 1048576.0},
                                               {"MiB", 1048576.0},
                                               {"MB", 1e6},
                                               {"G", 1073741824.0},
                                               {"GiB", 1073741824.0},
                                               {"GB", 1e9},
                                               {"T", 1099511627776.0},
                                               {"TiB", 1099511627776.0},
                                               {"TB", 1e12}}};
  for (const Unit& u : units) {
    if (unit != u.name) continue;
    const double bytes = value * u.factor;
    // 2^64 itself is not representable; refuse anything at or above it.
    if (bytes >= 18446744073709551616.0) bad(what, text, "overflows a 64-bit byte count");
    if (bytes != std::floor(bytes)) bad(what, text, "is not a whole number of bytes");
    return static_cast<std::size_t>(bytes);
  }
  bad(what, text, std::string("has an unknown unit (use ") + kSizeUnits + ")");
}

double parse_time_us(std::string_view text, std::string_view what) {
  if (text.empty()) bad(what, text, "is empty");
  auto [value, unit] = split_number(text, what);
  double factor = 0;
  if (unit.empty() && value == 0) factor = 1.0;
  else if (unit.empty()) bad(what, text, std::string("needs a unit (") + kTimeUnits + "), e.g. '" + std::string(text) + "ms'");
  else if (unit == "us") factor = 1.0;
  else if (unit == "ns") factor = 1e-3;
  else if (unit == "ms") factor = 1e3;
  else if (unit == "s") factor = 1e6;
  else bad(what, text, std::string("has an unknown unit (use ") + kTimeUnits + ")");
  const double us = value * factor;
  if (!std::isfinite(us) || us > 1e15) bad(what, text, "is absurdly large");
  return us;
}

std::string format_bytes(std::size_t bytes) {
  static constexpr std::array<const char*, 5> names{"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < names.size()) {
    value /= 1024.0;
    ++unit;
  }
  char buf[48];
  if (value == std::floor(value)) std::snprintf(buf, sizeof buf, "%.0f %s", value, names[unit]);
  else std::snprintf(buf, sizeof buf, "%.2f %s", value, names[unit]);
  return buf;
}

std::string format_time_us(double us) {
  char buf[48];
  if (us < 1e3) std::snprintf(buf, sizeof buf, "%.1f us", us);
  else if (us < 1e6) std::snprintf(buf, sizeof buf, "%.2f ms", us / 1e3);
  else std::snprintf(buf, sizeof buf, "%.2f s", us / 1e6);
  return buf;
}

std::string format_ratio(double ratio) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3g", ratio);
  return buf;
}

double gbps(std::size_t bytes, double time_us) {
  if (time_us <= 0) return 0.0;
  return static_cast<double>(bytes) / (time_us * 1e3);  // B/us = MB/s; /1e3 -> GB/s
}

}  // namespace colltune

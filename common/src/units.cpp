#include "colltune/common/units.hpp"

#include <array>
#include <cmath>
#include <cstdio>
#include <string>

namespace colltune {

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

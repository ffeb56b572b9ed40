// Numbers, sizes, times and rates (parse.hpp): one grammar, one wording.
#include "colltune/common/parse.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "colltune/common/error.hpp"
#include "colltune/common/limits.hpp"

namespace colltune {
namespace parse {
namespace {

constexpr std::size_t kShownMax = 120;

// from_chars over the whole of `text`, nothing before or after the number.
template <class T>
bool whole(std::string_view text, T& out) {
  if (text.empty()) return false;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

std::string shown(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < kShownMax; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != 0x7f) {
      out += static_cast<char>(c);
      continue;
    }
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", c);
    out += buf;
  }
  if (text.size() > kShownMax) out += "...";
  return out;
}

namespace {

// "'TEXT' ", the start of every reason (built by appending: GCC 12 warns, wrongly, about
// "'" + std::string).
std::string quoted(std::string_view text) {
  std::string out(1, '\'');
  out += shown(text);
  out += "' ";
  return out;
}

}  // namespace

void refuse(std::string_view what, std::string_view text, std::string_view reason) {
  std::string message(what);
  message += ": ";
  message += quoted(text);
  message += reason;
  throw Error(message);
}

template <std::integral T>
std::optional<T> try_integer(std::string_view text) {
  // from_chars takes no '+', blanks or base prefix; it does take a '-' for unsigned types as an
  // error, and reports overflow as an error: both are "not one".
  T v{};
  if (!whole(text, v)) return std::nullopt;
  return v;
}

template <std::integral T>
std::string integer_problem(std::string_view text, T min, T max) {
  const std::optional<T> v = try_integer<T>(text);
  if (v && *v >= min && *v <= max) return "";
  const bool negative = !text.empty() && text[0] == '-';
  const bool digits = text.size() > (negative ? 1u : 0u) &&
                      text.find_first_not_of("0123456789", negative ? 1 : 0) == std::string_view::npos;
  if (!digits) return quoted(text) + "is not a decimal integer";
  if (negative && min == 0) return quoted(text) + "must not be negative";
  return quoted(text) + "must be an integer in " + std::to_string(min) + ".." + std::to_string(max);
}

template <std::integral T>
T integer(std::string_view text, std::string_view what, T min, T max) {
  const std::string problem = integer_problem<T>(text, min, max);
  if (!problem.empty()) throw Error(std::string(what) + ": " + problem);
  return *try_integer<T>(text);
}

#define COLLTUNE_PARSE_INTEGER(T)                                         \
  template std::optional<T> try_integer<T>(std::string_view);             \
  template T integer<T>(std::string_view, std::string_view, T, T); \
  template std::string integer_problem<T>(std::string_view, T, T);
COLLTUNE_PARSE_INTEGER(int)
COLLTUNE_PARSE_INTEGER(long)
COLLTUNE_PARSE_INTEGER(long long)
COLLTUNE_PARSE_INTEGER(unsigned)
COLLTUNE_PARSE_INTEGER(unsigned long)
COLLTUNE_PARSE_INTEGER(unsigned long long)
#undef COLLTUNE_PARSE_INTEGER

bool Bounds::contains(double v) const {
  const bool low_ok = min_open ? v > min : v >= min;
  const bool high_ok = max_open ? v < max : v <= max;
  return std::isfinite(v) && low_ok && high_ok;
}

std::string Bounds::text() const {
  const bool low = std::isfinite(min), high = std::isfinite(max);
  if (low && !high) return std::string(min_open ? "> " : ">= ") + number_text(min);
  if (!low && high) return std::string(max_open ? "< " : "<= ") + number_text(max);
  if (!low && !high) return "finite";
  return std::string("in ") + (min_open ? "(" : "[") + number_text(min) + ", " + number_text(max) +
         (max_open ? ")" : "]");
}

std::optional<double> try_number(std::string_view text) {
  // from_chars' general format is decimal only (no "0x"), takes no '+' or blanks; it does take
  // "inf" and "nan", which isfinite refuses, and reports 1e400 as an error.
  double v = 0;
  if (!whole(text, v) || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string number_problem(std::string_view text, Bounds bounds) {
  const std::optional<double> v = try_number(text);
  if (!v) return quoted(text) + "is not a finite decimal number";
  if (!bounds.contains(*v)) return quoted(text) + "must be " + bounds.text();
  return "";
}

double number(std::string_view text, std::string_view what, Bounds bounds) {
  const std::string problem = number_problem(text, bounds);
  if (!problem.empty()) throw Error(std::string(what) + ": " + problem);
  return *try_number(text);
}

namespace {

// "1.5MiB" -> 1.5 and "MiB": the leading number (finite, not negative) and the unit after it.
std::pair<double, std::string_view> number_and_unit(std::string_view text, std::string_view what) {
  if (text.empty()) refuse(what, text, "is empty");
  double value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || !std::isfinite(value)) refuse(what, text, "is not a number with an optional unit");
  if (value < 0) refuse(what, text, "must not be negative");
  return {value, std::string_view(ptr, static_cast<std::size_t>(text.data() + text.size() - ptr))};
}

struct Unit {
  std::string_view name;
  double factor;
};

}  // namespace

double rate_gbps(std::string_view text, std::string_view what) {
  static constexpr std::array<Unit, 6> units{
      {{"", 1.0}, {"GB/s", 1.0}, {"Gb/s", 0.125}, {"Gbit/s", 0.125}, {"MB/s", 1e-3}, {"TB/s", 1e3}}};
  const auto [value, unit] = number_and_unit(text, what);
  for (const Unit& u : units) {
    if (unit != u.name) continue;
    const double gbps = value * u.factor;
    if (gbps < limits::kMinBandwidthGbps || gbps > limits::kMaxBandwidthGbps)
      refuse(what, text, "must be within 1e-06..1e+06 GB/s (" + std::string(limits::kLinkFigureReason) + ")");
    return gbps;
  }
  refuse(what, text, "has an unknown unit (use GB/s, Gb/s, Gbit/s, MB/s or TB/s; a bare number is GB/s)");
}

}  // namespace parse

namespace {
constexpr const char* kSizeUnits = "B, KiB, MiB, GiB, TiB, KB, MB, GB, TB or K/M/G/T";
constexpr const char* kTimeUnits = "ns, us, ms or s";
}  // namespace

std::size_t parse_size(std::string_view text, std::string_view what, BareNumber bare) {
  static constexpr std::array<parse::Unit, 14> units{{{"", 1.0},
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
  const auto [value, unit] = parse::number_and_unit(text, what);
  if (unit.empty() && value != 0 && bare == BareNumber::refused)
    parse::refuse(what, text,
                  std::string("needs a unit (") + kSizeUnits + "), e.g. '" + parse::shown(text) + "MiB'");
  for (const parse::Unit& u : units) {
    if (unit != u.name) continue;
    const double bytes = value * u.factor;
    // 2^64 itself is not representable; refuse anything at or above it.
    if (bytes >= 18446744073709551616.0) parse::refuse(what, text, "overflows a 64-bit byte count");
    if (bytes != std::floor(bytes)) parse::refuse(what, text, "is not a whole number of bytes");
    return static_cast<std::size_t>(bytes);
  }
  parse::refuse(what, text, std::string("has an unknown unit (use ") + kSizeUnits + ")");
}

double parse_time_us(std::string_view text, std::string_view what) {
  static constexpr std::array<parse::Unit, 4> units{{{"us", 1.0}, {"ns", 1e-3}, {"ms", 1e3}, {"s", 1e6}}};
  const auto [value, unit] = parse::number_and_unit(text, what);
  if (unit.empty() && value == 0) return 0.0;
  if (unit.empty())
    parse::refuse(what, text, std::string("needs a unit (") + kTimeUnits + "), e.g. '" + parse::shown(text) + "ms'");
  for (const parse::Unit& u : units) {
    if (unit != u.name) continue;
    const double us = value * u.factor;
    if (!std::isfinite(us) || us > 1e15) parse::refuse(what, text, "is absurdly large");
    return us;
  }
  parse::refuse(what, text, std::string("has an unknown unit (use ") + kTimeUnits + ")");
}

}  // namespace colltune

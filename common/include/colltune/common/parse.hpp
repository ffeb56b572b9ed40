#pragma once
// One parser for what users type and files carry (docs/hardening.md "Reading input"): integers,
// real numbers, sizes, times, rates, and `name:key=value,...` specs. One grammar everywhere:
//  - a token is read whole: no leading or trailing blanks, no '+', no hex ("0x10"), no exponent
//    in an integer, no "inf" or "nan", decimal only and independent of the locale;
//  - every number is finite and checked against the range its caller states;
//  - a spec's items are split at ',' and each key given once.
// Every refusal reads alike, "WHAT: 'TEXT' REASON", e.g.
//     --steps: '0' must be an integer in 1..1000000
//     preset fat-tree: nodes: 'x' is not a decimal integer
// where WHAT names the option, key or field (with the file and line when there is one).
#include <cmath>
#include <concepts>
#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace colltune {

// Whether a size may be a bare number of bytes. Where the option's name says bytes (nccl-tests'
// -b/-e, simulate --bytes) it may; where a bare number could as well mean KiB or MiB
// (--fusion-threshold 64, --chunk 1) a unit is required. 0 never needs one.
enum class BareNumber { bytes, refused };

// Parses "4096", "64KiB", "64MiB", "1GiB", "1.5MiB", "64MB" (decimal), "64K"/"64M"/"64G"
// (binary, as nccl-tests reads them) into bytes. Refuses garbage, negative values, values that
// are not a whole number of bytes or overflow size_t, and a bare number where `bare` refuses it
// (the message lists the units).
std::size_t parse_size(std::string_view text, std::string_view what, BareNumber bare = BareNumber::bytes);

// Parses "250us", "5ms", "0.1ms", "1s", "100ns" into microseconds, at most 1e15 us (30 years).
// A unit is required (a bare "5" once silently meant 5 us where 5 ms was meant); only 0 may go
// without.
double parse_time_us(std::string_view text, std::string_view what);

namespace parse {

// Throws colltune::Error "WHAT: 'TEXT' REASON" (control bytes in TEXT printed escaped).
[[noreturn]] void refuse(std::string_view what, std::string_view text, std::string_view reason);

// TEXT as it is quoted in messages: printable ASCII as is, anything else as \xNN, cut at 80.
std::string shown(std::string_view text);

// ---- integers ---------------------------------------------------------------------------------
// An optional '-' (signed types only) and decimal digits, the whole token; leading zeros are
// decimal ("010" is 10). nullopt when the text is not one, or does not fit T.
template <std::integral T>
std::optional<T> try_integer(std::string_view text);

// The integer in [min, max]; refuses "is not a decimal integer", "must not be negative" (a '-'
// where min is 0) or "must be an integer in MIN..MAX".
template <std::integral T>
T integer(std::string_view text, std::string_view what, T min = std::numeric_limits<T>::lowest(),
          T max = std::numeric_limits<T>::max());

// What integer() would say after "WHAT: " ("'0x10' is not a decimal integer"); "" when TEXT is
// an integer in [min, max]. For front ends that add the name themselves (CLI11's validators).
template <std::integral T>
std::string integer_problem(std::string_view text, T min = std::numeric_limits<T>::lowest(),
                            T max = std::numeric_limits<T>::max());

// ---- real numbers -----------------------------------------------------------------------------
// The interval a real number must lie in; its ends open or closed, infinite ends allowed.
struct Bounds {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_open = false;
  bool max_open = false;

  constexpr static Bounds any() { return {}; }
  constexpr static Bounds positive() { return {0.0, std::numeric_limits<double>::infinity(), true, false}; }
  constexpr static Bounds non_negative() { return {0.0, std::numeric_limits<double>::infinity(), false, false}; }
  constexpr static Bounds closed(double lo, double hi) { return {lo, hi, false, false}; }
  // (lo, hi]: above lo, at most hi.
  constexpr static Bounds above(double lo, double hi = std::numeric_limits<double>::infinity()) { return {lo, hi, true, false}; }

  bool contains(double v) const;
  // "> 0", ">= 0", "in [0, 1]", "in (0, 1e+06]": for "must be ..." messages.
  std::string text() const;
};

// A finite decimal number, the whole token (digits, one '.', an exponent "e-3"; a leading '-').
// nullopt for anything else, "inf", "nan", "1e400" and hex floats included.
std::optional<double> try_number(std::string_view text);

// The number within `bounds`; refuses "is not a finite decimal number" or "must be BOUNDS".
double number(std::string_view text, std::string_view what, Bounds bounds = Bounds::any());
// What number() would say after "WHAT: "; "" when TEXT is a number within `bounds`.
std::string number_problem(std::string_view text, Bounds bounds = Bounds::any());

// ---- rates ------------------------------------------------------------------------------------
// A bandwidth in GB/s (1e9 B/s): a bare number is GB/s; "GB/s", "Gb/s", "Gbit/s", "MB/s", "TB/s"
// name their unit. Always within the links' physical range (limits::kMinBandwidthGbps ..
// kMaxBandwidthGbps), so bytes / rate stays finite.
double rate_gbps(std::string_view text, std::string_view what);

// ---- specs ------------------------------------------------------------------------------------
// One item of a spec: "key=value", or a bare flag ("colocated") where the reader allows flags.
struct SpecItem {
  std::string key;
  std::string value;
  bool flag = false;  // written without '='
};

// "name:key=value,key=value": the name and its items in the order written.
struct Spec {
  std::string name;
  std::vector<SpecItem> items;

  const SpecItem* find(std::string_view key) const;
  // Sets `key` to `value`: replaces the item or appends one.
  void set(std::string_view key, std::string_view value);
  // The spec written back: "name:k=v,flag".
  std::string text() const;
};

enum class Flags { refused, allowed };

// The items of "key=value,key=value" (empty text: none). Refuses an empty item, an empty key, a
// key given twice, and an item without '=' unless `flags` allows it; `hint` (e.g. the valid keys)
// is added to the message of a malformed item.
std::vector<SpecItem> split_items(std::string_view text, std::string_view what, Flags flags = Flags::refused,
                                  std::string_view hint = {});

// "name" or "name:items" split at the first ':' (the names of presets, profiles and runtimes
// hold none).
Spec split_spec(std::string_view text, std::string_view what, Flags flags = Flags::refused);

// As split_spec, for a spec whose name may be a file path holding ':' itself: split at the last
// ':' that is followed by key=value text ("/data/a:b/server.json:nodes=4").
Spec split_file_spec(std::string_view text, std::string_view what);

}  // namespace parse
}  // namespace colltune

// Parsing and range-checking of preset parameters ("nodes=4,nic_gbit=400").
#include "presets/preset_params.hpp"

#include <charconv>
#include <cmath>

#include "colltune/common/error.hpp"
#include "graph/text_util.hpp"

namespace colltune::topo::detail {
namespace {

std::string valid_keys(const PresetInfo& info) {
  const std::string out = join_names(info.params, [](const PresetParam& p) -> const std::string& { return p.key; });
  return out.empty() ? "none" : out;
}

// Decimal only, the whole text: from_chars (unlike strtod) takes no hex ("0x10"), no leading
// space or '+', and does not depend on the locale.
bool parse_double(std::string_view text, double& out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size() && !text.empty() && std::isfinite(out);
}

bool parse_int(std::string_view text, int& out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size() && !text.empty();
}

}  // namespace

PresetParams::PresetParams(const PresetInfo& info, std::string_view text) : info_(info) {
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0)
      throw Error("preset " + info.name + ": '" + std::string(item) + "' is not key=value (valid keys: " +
                  valid_keys(info) + ")");
    const std::string key(item.substr(0, eq));
    bool known = false;
    for (const PresetParam& p : info.params) known = known || p.key == key;
    if (!known)
      throw Error("preset " + info.name + ": unknown parameter '" + key + "' (valid: " + valid_keys(info) + ")");
    if (!given_.emplace(key, std::string(item.substr(eq + 1))).second)
      throw Error("preset " + info.name + ": parameter '" + key + "' given twice");
  }
}

const std::string& PresetParams::raw(const std::string& key) const {
  if (auto it = given_.find(key); it != given_.end()) return it->second;
  for (const PresetParam& p : info_.params)
    if (p.key == key) return p.default_value;
  throw Error("preset " + info_.name + ": internal: no parameter '" + key + "'");
}

bool PresetParams::nvls(bool capable, const std::string& why_not) const {
  const bool on = integer("nvls", 0, 1) == 1;
  if (on && !capable && given_.count("nvls") != 0)
    throw Error("preset " + info_.name + ": nvls=1: " + why_not);
  return on && capable;
}

void PresetParams::bad(const std::string& key, const std::string& expected) const {
  throw Error("preset " + info_.name + ": " + key + "=" + raw(key) + ": expected " + expected);
}

int PresetParams::integer(const std::string& key, int min, int max) const {
  int v = 0;
  if (!parse_int(raw(key), v) || v < min || v > max)
    bad(key, "an integer in " + std::to_string(min) + ".." + std::to_string(max));
  return v;
}

double PresetParams::number(const std::string& key, double min_exclusive) const {
  double v = 0;
  if (!parse_double(raw(key), v) || !(v > min_exclusive)) bad(key, "a number > " + fmt_num(min_exclusive));
  return v;
}

double PresetParams::non_negative(const std::string& key) const {
  double v = 0;
  if (!parse_double(raw(key), v) || v < 0) bad(key, "a number >= 0");
  return v;
}

NetTransport PresetParams::transport() const {
  try {
    return parse_net_transport(raw("transport"));
  } catch (const Error&) {
    bad("transport", "ib, roce or tcp");
  }
}

const GpuSpec& PresetParams::gpu() const {
  return find_gpu(raw("gpu"), "preset " + info_.name + ": gpu=" + raw("gpu"));
}

std::vector<int> PresetParams::dims(const std::string& key) const {
  std::vector<int> out;
  std::string_view text = raw(key);
  while (true) {
    const std::size_t x = text.find('x');
    int v = 0;
    if (!parse_int(text.substr(0, x), v) || v < 1 || v > 4096) bad(key, "sizes like 4x4 or 4x4x4, each 1..4096");
    out.push_back(v);
    if (x == std::string_view::npos) break;
    text = text.substr(x + 1);
  }
  if (out.size() < 2 || out.size() > 3) bad(key, "2 or 3 dimensions, like 8x8 or 4x4x4");
  return out;
}

}  // namespace colltune::topo::detail

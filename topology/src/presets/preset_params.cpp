// Parsing and range-checking of preset parameters ("nodes=4,nic_gbit=400").
#include "presets/preset_params.hpp"

#include <optional>

#include "colltune/common/error.hpp"
#include "colltune/common/parse.hpp"
#include "graph/text_util.hpp"

namespace colltune::topo::detail {
namespace {

std::string valid_keys(const PresetInfo& info) {
  const std::string out = join_names(info.params, [](const PresetParam& p) -> const std::string& { return p.key; });
  return out.empty() ? "none" : out;
}

}  // namespace

PresetParams::PresetParams(const PresetInfo& info, std::string_view text) : info_(info) {
  const std::string what = "preset " + info.name;
  for (parse::SpecItem& item : parse::split_items(text, what, parse::Flags::refused, "valid keys: " + valid_keys(info))) {
    bool known = false;
    for (const PresetParam& p : info.params) known = known || p.key == item.key;
    if (!known) throw Error(what + ": unknown parameter '" + item.key + "' (valid: " + valid_keys(info) + ")");
    given_.emplace(std::move(item.key), std::move(item.value));
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
  parse::refuse(what(key), raw(key), "must be " + expected);
}

std::string PresetParams::what(const std::string& key) const { return "preset " + info_.name + ": " + key; }

int PresetParams::integer(const std::string& key, int min, int max) const {
  return parse::integer<int>(raw(key), what(key), min, max);
}

double PresetParams::number(const std::string& key, double min_exclusive) const {
  return parse::number(raw(key), what(key), parse::Bounds::above(min_exclusive));
}

double PresetParams::non_negative(const std::string& key) const {
  return parse::number(raw(key), what(key), parse::Bounds::non_negative());
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

const CpuSpec& PresetParams::cpu() const {
  try {
    return find_cpu(raw("cpu"));
  } catch (const Error&) {
    bad("cpu", "one of " + known_cpus());
  }
}

std::vector<int> PresetParams::dims(const std::string& key) const {
  std::vector<int> out;
  std::string_view text = raw(key);
  while (true) {
    const std::size_t x = text.find('x');
    const std::optional<int> v = parse::try_integer<int>(text.substr(0, x));
    if (!v || *v < 1 || *v > 4096) bad(key, "sizes like 4x4 or 4x4x4, each 1..4096");
    out.push_back(*v);
    if (x == std::string_view::npos) break;
    text = text.substr(x + 1);
  }
  if (out.size() < 2 || out.size() > 3) bad(key, "2 or 3 dimensions, like 8x8 or 4x4x4");
  return out;
}

}  // namespace colltune::topo::detail

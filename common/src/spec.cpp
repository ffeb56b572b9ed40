// `name:key=value,...` specs (parse.hpp): one splitter for presets, model profiles, runtimes,
// replicated servers and sweeps, each key given once.
#include <algorithm>

#include "colltune/common/parse.hpp"

namespace colltune::parse {
namespace {

SpecItem split_item(std::string_view item, std::string_view what, Flags flags, std::string_view hint) {
  const std::string why = hint.empty() ? "is not key=value" : "is not key=value (" + std::string(hint) + ")";
  const std::size_t eq = item.find('=');
  if (eq == std::string_view::npos) {
    if (flags == Flags::refused) refuse(what, item, why);
    return {std::string(item), {}, true};
  }
  if (eq == 0) refuse(what, item, why);
  return {std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)), false};
}

}  // namespace

const SpecItem* Spec::find(std::string_view key) const {
  const auto it = std::find_if(items.begin(), items.end(), [&](const SpecItem& i) { return i.key == key; });
  return it == items.end() ? nullptr : &*it;
}

void Spec::set(std::string_view key, std::string_view value) {
  for (SpecItem& i : items) {
    if (i.key != key) continue;
    i.value = std::string(value);
    i.flag = false;
    return;
  }
  items.push_back({std::string(key), std::string(value), false});
}

std::string Spec::text() const {
  std::string out = name;
  for (std::size_t i = 0; i < items.size(); ++i)
    out += (i == 0 ? ":" : ",") + items[i].key + (items[i].flag ? "" : "=" + items[i].value);
  return out;
}

std::vector<SpecItem> split_items(std::string_view text, std::string_view what, Flags flags, std::string_view hint) {
  std::vector<SpecItem> out;
  if (text.empty()) return out;
  const std::string_view whole = text;
  while (true) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    if (item.empty()) refuse(what, whole, "has an empty item (two commas, or one at an end)");
    SpecItem parsed = split_item(item, what, flags, hint);
    if (std::any_of(out.begin(), out.end(), [&](const SpecItem& i) { return i.key == parsed.key; }))
      refuse(what, parsed.key, "is given twice");
    out.push_back(std::move(parsed));
    if (comma == std::string_view::npos) return out;
    text = text.substr(comma + 1);
  }
}

Spec split_spec(std::string_view text, std::string_view what, Flags flags) {
  const std::size_t colon = text.find(':');
  Spec s{std::string(text.substr(0, colon)), {}};
  if (colon != std::string_view::npos) s.items = split_items(text.substr(colon + 1), what, flags);
  return s;
}

Spec split_file_spec(std::string_view text, std::string_view what) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || text.find('=', colon) == std::string_view::npos)
    return {std::string(text), {}};
  return {std::string(text.substr(0, colon)), split_items(text.substr(colon + 1), what)};
}

}  // namespace colltune::parse

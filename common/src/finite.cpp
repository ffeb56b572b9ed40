// The output boundary's checks (finite.hpp).
#include "colltune/common/finite.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>

#include <string>

namespace colltune::finite {
namespace {

using nlohmann::json;

// Keys whose numbers are differences and may be negative: an uneven epoch's loss against the
// even split (it is a gain when the uneven ranks finish early).
constexpr std::array<std::string_view, 1> kSignedKeys{"loss_s"};

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// A time, size or rate: never negative.
bool physical_key(std::string_view key) {
  if (std::find(kSignedKeys.begin(), kSignedKeys.end(), key) != kSignedKeys.end()) return false;
  for (std::string_view suffix : {"_us", "_ms", "_s", "_gbps", "bytes"})
    if (ends_with(key, suffix)) return true;
  return false;
}

// "~" and "/" escaped as RFC 6901 does.
std::string pointer_token(std::string_view key) {
  std::string out;
  for (char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

template <class Json>
void check_value(const Json& v, std::string_view key, const std::string& pointer, std::string_view what) {
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) check_value(*it, it.key(), pointer + "/" + pointer_token(it.key()), what);
  } else if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i) check_value(v[i], key, pointer + "/" + std::to_string(i), what);
  } else if (v.is_number_float()) {
    const double x = v.template get<double>();
    if (!std::isfinite(x))
      throw InternalError(std::string(what) + ": " + (pointer.empty() ? "/" : pointer) + ": " + std::to_string(x) +
                          " is not finite");
    if (x < 0 && physical_key(key))
      throw InternalError(std::string(what) + ": " + pointer + ": " + std::to_string(x) + " is negative");
  } else if (v.is_number_integer() && v.template get<long long>() < 0 && physical_key(key)) {
    throw InternalError(std::string(what) + ": " + pointer + ": " + std::to_string(v.template get<long long>()) +
                        " is negative");
  }
}

bool starts_token(char c) {
  return std::isspace(static_cast<unsigned char>(c)) || std::string_view("([{,:=\"'|<>;").find(c) != std::string_view::npos;
}

bool ends_token(char c) {
  return std::isspace(static_cast<unsigned char>(c)) || std::string_view(")]},:;\"'|<").find(c) != std::string_view::npos;
}

bool equal_ignoring_case(std::string_view text, std::size_t at, std::string_view word) {
  if (at + word.size() > text.size()) return false;
  for (std::size_t i = 0; i < word.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(text[at + i])) != word[i]) return false;
  return true;
}

// The end of a non-finite number starting at `at` ("-inf", "nan", ".inf", "+infinity", with a
// unit such as "%", "x" or "ms" after it), or npos.
std::size_t non_finite_end(std::string_view text, std::size_t at) {
  std::size_t i = at;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
  if (i < text.size() && text[i] == '.') ++i;  // YAML's .inf and .nan
  std::size_t end = std::string_view::npos;
  for (std::string_view word : {"infinity", "inf", "nan"})
    if (equal_ignoring_case(text, i, word)) {
      end = i + word.size();
      break;
    }
  if (end == std::string_view::npos) return end;
  for (std::string_view unit : {"%", "x", "ms", "us", "ns", "s", "B"})  // what printers append
    if (text.substr(end, unit.size()) == unit && (end + unit.size() == text.size() || ends_token(text[end + unit.size()])))
      return end + unit.size();
  return end == text.size() || ends_token(text[end]) ? end : std::string_view::npos;
}

}  // namespace

void check_json(const json& doc, std::string_view what) { check_value(doc, "", "", what); }
void check_json(const nlohmann::ordered_json& doc, std::string_view what) { check_value(doc, "", "", what); }

std::string json_text(const json& doc, int indent, std::string_view what) {
  check_json(doc, what);
  return doc.dump(indent);
}

std::string json_text(const nlohmann::ordered_json& doc, int indent, std::string_view what) {
  check_json(doc, what);
  return doc.dump(indent);
}

namespace {

// [begin, end) of the first non-finite number in `text`; begin == npos when there is none.
std::pair<std::size_t, std::size_t> find_non_finite(std::string_view text) {
  for (std::size_t at = 0; at < text.size(); ++at) {
    if (at > 0 && !starts_token(text[at - 1])) continue;
    const std::size_t end = non_finite_end(text, at);
    if (end != std::string_view::npos) return {at, end};
  }
  return {std::string_view::npos, std::string_view::npos};
}

}  // namespace

std::optional<std::string> non_finite_token(std::string_view text) {
  const auto [at, end] = find_non_finite(text);
  if (at == std::string_view::npos) return std::nullopt;
  return std::string(text.substr(at, end - at));
}

void check_text(std::string_view text, std::string_view what) {
  const auto [at, end] = find_non_finite(text);
  if (at == std::string_view::npos) return;
  const std::size_t newline = at == 0 ? std::string_view::npos : text.rfind('\n', at - 1);
  const std::size_t begin = newline == std::string_view::npos ? 0 : newline + 1;
  const std::string_view line = text.substr(begin, std::min(text.find('\n', at), text.size()) - begin);
  throw InternalError(std::string(what) + ": non-finite number '" + std::string(text.substr(at, end - at)) +
                      "' in: " + std::string(line.substr(0, 200)));
}

}  // namespace colltune::finite

// JSON front end (see json_input.hpp). The document is parsed by nlohmann::json; on failure a
// second, DOM-less SAX pass finds where it failed, which the library reports for number
// overflow (out_of_range.406) only through SAX.
#include "colltune/common/json_input.hpp"

#include <algorithm>

#include "colltune/common/error.hpp"
#include "colltune/common/limits.hpp"

namespace colltune::json_input {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxProblemChars = 200;  // a token of a broken file can be megabytes long

// 1-based line and column of byte `offset`.
std::pair<std::size_t, std::size_t> line_column(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  const std::string_view head = text.substr(0, offset);
  const std::size_t line = 1 + static_cast<std::size_t>(std::count(head.begin(), head.end(), '\n'));
  const std::size_t newline = head.rfind('\n');
  const std::size_t column = newline == std::string_view::npos ? offset + 1 : offset - newline;
  return {line, column};
}

std::string located(std::string_view source, std::size_t line, std::size_t column, std::string_view problem) {
  return std::string(source) + ": line " + std::to_string(line) + ", column " + std::to_string(column) + ": " +
         std::string(problem);
}

// Refuses nesting deeper than the limit before any recursive code sees the document. Brackets
// inside strings do not count; the scan is linear and allocates nothing.
void check_depth(std::string_view text, std::string_view source) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limits::kMaxJsonDepth) {
        const auto [line, column] = line_column(text, i);
        throw Error(located(source, line, column,
                            "nesting deeper than " + std::to_string(limits::kMaxJsonDepth) + " levels (the limit; " +
                                limits::kMaxDepthReason + ")"));
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

std::string cut(std::string text) {
  if (text.size() > kMaxProblemChars) text = text.substr(0, kMaxProblemChars - 3) + "...";
  return text;
}

// Drops "[json.exception.parse_error.101] parse error at line 1, column 5: " and the like.
std::string strip_prefix(std::string msg) {
  if (msg.rfind("[json.exception.", 0) == 0) {
    if (const std::size_t end = msg.find("] "); end != std::string::npos) msg.erase(0, end + 2);
  }
  if (msg.rfind("parse error", 0) == 0) {
    if (const std::size_t colon = msg.find(": "); colon != std::string::npos) msg.erase(0, colon + 2);
  }
  return msg;
}

// Finds where and why parsing failed: a SAX pass that builds nothing.
class Locator final : public nlohmann::json_sax<json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string& token, const nlohmann::detail::exception& e) override {
    position_ = position;
    if (e.id == 406) {
      problem_ = "number " + token + " is out of range (a double holds magnitudes up to 1.8e308)";
    } else {
      std::string msg = strip_prefix(e.what());
      if (msg.find("; expected end of input") != std::string::npos) {
        problem_ = "syntax error: unexpected text after the end of the JSON document";
        return false;
      }
      // "syntax error while parsing object key - unexpected end of input; ..." -> "syntax error: unexpected ..."
      const std::string lead = "syntax error while parsing ";
      if (const std::size_t dash = msg.find(" - "); msg.rfind(lead, 0) == 0 && dash != std::string::npos)
        msg.erase(0, dash + 3);
      if (msg.rfind("syntax error", 0) != 0) msg = "syntax error: " + msg;
      problem_ = msg;
    }
    return false;
  }
  std::size_t position() const { return position_; }
  const std::string& problem() const { return problem_; }

 private:
  std::size_t position_ = 0;
  std::string problem_ = "malformed JSON";
};

SyntaxError locate(std::string_view text) {
  Locator locator;
  json::sax_parse(text, &locator);
  SyntaxError error;
  // The lexer reports the count of characters read: past the end when the input ran out.
  error.at_end = locator.position() > text.size();
  const std::size_t offset = locator.position() == 0 ? 0 : locator.position() - 1;
  std::tie(error.line, error.column) = line_column(text, offset);
  error.problem = cut(locator.problem());
  return error;
}

}  // namespace

std::optional<json> try_parse(std::string_view text, std::string_view source, SyntaxError& error) {
  check_depth(text, source);
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_discarded()) return doc;
  error = locate(text);
  return std::nullopt;
}

json parse(std::string_view text, std::string_view source) {
  SyntaxError error;
  std::optional<json> doc = try_parse(text, source, error);
  if (!doc) throw Error(located(source, error.line, error.column, error.problem));
  return std::move(*doc);
}

std::string describe(const json::exception& e) {
  std::string msg = strip_prefix(e.what());
  // type_error.302: "type must be string, but is number" -> "expected a string, got a number".
  const std::string must = "type must be ", but = ", but is ";
  if (msg.rfind(must, 0) == 0) {
    if (const std::size_t b = msg.find(but); b != std::string::npos) {
      auto article = [](const std::string& kind) {
        return (kind.empty() || std::string("aeiou").find(kind[0]) == std::string::npos ? "a " : "an ") + kind;
      };
      msg = "expected " + article(msg.substr(must.size(), b - must.size())) + ", got " +
            article(msg.substr(b + but.size()));
    }
  }
  return cut(msg);
}

void rethrow(const json::exception& e, std::string_view source, std::string_view where) {
  std::string msg(source);
  if (!where.empty()) msg.append(": ").append(where);
  throw Error(msg + ": " + describe(e));
}

std::string shown(const json& value) {
  // dump() replaces invalid UTF-8 instead of throwing; the document is at most kMaxJsonDepth deep.
  std::string s = value.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

}  // namespace colltune::json_input

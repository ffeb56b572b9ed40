#pragma once
// The one front end of every JSON reader (topology, workload, Horovod timeline): nesting bounded
// by limits::kMaxJsonDepth before the document is parsed, and the JSON library's exceptions
// turned into colltune::Error lines that name the file, the place and the problem:
//   "net.json: line 3, column 12: syntax error: unexpected '}'"
//   "timeline.json: event 0: \"ph\": expected a string, got 1"
// Readers check types themselves where they can name the field; rethrow() is the safety net for
// what slips through, so no "[json.exception.type_error.302]" ever reaches a user.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace colltune::json_input {

// Where and why a document failed to parse.
struct SyntaxError {
  std::size_t line = 0, column = 0;  // 1-based
  std::string problem;               // "syntax error: ...", "number 1e400 is out of range ..."
  bool at_end = false;               // the input ended early (a cut-short file), nothing after it
};

// Parses `text` (the whole file) as one JSON document. Throws colltune::Error
// "SOURCE: line L, column C: PROBLEM" for syntax errors, trailing garbage, numbers beyond the
// range of a double and nesting deeper than limits::kMaxJsonDepth.
nlohmann::json parse(std::string_view text, std::string_view source);

// As parse(), but a syntax error is returned in `error` (and nullopt) instead of thrown, for
// readers that repair cut-short files. Too deep a document still throws.
std::optional<nlohmann::json> try_parse(std::string_view text, std::string_view source, SyntaxError& error);

// The problem a JSON library exception describes, in plain words without its
// "[json.exception.type_error.302]" prefix: "expected a string, got a number".
std::string describe(const nlohmann::json::exception& e);

// Throws colltune::Error "SOURCE: WHERE: describe(e)" (WHERE may be empty).
[[noreturn]] void rethrow(const nlohmann::json::exception& e, std::string_view source, std::string_view where);

// A value as messages show it: its JSON text, cut to 60 characters.
std::string shown(const nlohmann::json& value);

}  // namespace colltune::json_input

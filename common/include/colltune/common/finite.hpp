#pragma once
// The finite-answer guarantee at the output boundary (docs/hardening.md "Finite answers"). Every
// number colltune prints or writes is finite and in its physical range; inputs that would drive
// one out are refused where they are read (exit 2, naming the option or file). A number that
// still reaches a writer non-finite or negative is therefore a bug in colltune: the writers here
// end the command with InternalError (exit 3, "internal error"), never with null, inf or nan in
// an answer and exit 0.
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace colltune::finite {

// A bug caught at the output boundary; the CLI maps it (as any non-colltune::Error) to exit 3.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// Throws InternalError "WHAT: /json/pointer: VALUE is not finite" for a NaN or infinity
// anywhere in `doc`, and "... is negative" for a negative number under a key that names a time,
// size or rate (suffix _us, _ms, _s, _gbps or bytes), except the keys that are differences
// (kSignedKeys in finite.cpp).
void check_json(const nlohmann::json& doc, std::string_view what);
void check_json(const nlohmann::ordered_json& doc, std::string_view what);

// check_json, then doc.dump(indent): the one way colltune turns an answer into JSON text.
std::string json_text(const nlohmann::json& doc, int indent, std::string_view what);
std::string json_text(const nlohmann::ordered_json& doc, int indent, std::string_view what);

// The first token of `text` that prints a non-finite number as printf, iostreams and yaml-cpp
// do ("inf", "-nan", "inf%", "(+inf%)", "infx", ".inf"), or nullopt. A token is delimited by
// blanks or punctuation on both sides, so words that contain the letters ("info", "nano",
// "inf.json") are not taken for one.
std::optional<std::string> non_finite_token(std::string_view text);

// Throws InternalError "WHAT: non-finite number 'TOKEN' in: LINE" when non_finite_token finds one.
void check_text(std::string_view text, std::string_view what);

}  // namespace colltune::finite

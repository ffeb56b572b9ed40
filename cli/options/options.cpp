// Option rules and exit statuses (see options.hpp).
#include "options/options.hpp"

#include <cstdlib>
#include <iostream>
#include <new>
#include <string>
#include <type_traits>

#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/limits.hpp"
#include "colltune/common/parse.hpp"
#include "colltune/common/units.hpp"
#include "options/output_guard.hpp"

namespace colltune::cli {
namespace {

// Integer options: parse::integer's grammar (plain decimal digits, the whole token, within the
// type's range), written back as canonical decimal so that CLI11 cannot read "010" as octal.
template <class T>
CLI::Validator decimal_integer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::string problem = parse::integer_problem<T>(text);
        if (problem.empty()) text = std::to_string(*parse::try_integer<T>(text));
        return problem;
      },
      std::is_unsigned_v<T> ? "NONNEGATIVE" : "", "decimal integer");
}

// Real options: a finite decimal number, the whole token (no hex, '+', blanks, inf or nan).
CLI::Validator finite_number() {
  return CLI::Validator([](std::string& text) { return parse::number_problem(text); }, "", "finite number");
}

void apply_to(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    const std::string type = opt->get_type_name();
    if (type.rfind("UINT", 0) == 0) opt->transform(decimal_integer<unsigned long long>());
    else if (type.rfind("INT", 0) == 0) opt->transform(decimal_integer<long long>());
    else if (type.rfind("FLOAT", 0) == 0) opt->transform(finite_number());
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) apply_to(*sub);
}

}  // namespace

int exit_status(const std::exception& e) {
  if (dynamic_cast<const CheckFailure*>(&e) != nullptr) return kExitCheckFailed;
  if (dynamic_cast<const Error*>(&e) != nullptr) return kExitBadInput;
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) return kExitBadInput;  // docs/hardening.md: out of memory
  return kExitInternal;
}

void apply_option_rules(CLI::App& app) { apply_to(app); }

CLI::Validator at_least(long long min) {
  return CLI::Validator(
      [min](std::string& text) {
        std::string problem = parse::integer_problem<long long>(text);
        if (problem.empty() && *parse::try_integer<long long>(text) < min)
          problem = "'" + parse::shown(text) + "' must be at least " + std::to_string(min);
        return problem;
      },
      ">= " + std::to_string(min), "at least");
}

bool under_mpi_launcher() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(var) != nullptr) return true;
  }
  return false;
}

int launch_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
    if (const char* text = std::getenv(var))
      if (const std::optional<int> rank = parse::try_integer<int>(text)) return *rank;
  return 0;
}

void JsonOutput::declare(OutputFiles& files) const {
  if (to_file()) files.file("--json", *destination);
}

void JsonOutput::stage(const std::string& json, OutputFiles& files) const {
  if (to_file()) files.stage(*destination, json + "\n");
}

void JsonOutput::print(const std::string& json) const {
  if (to_stdout()) print_checked_json(json);
}

void JsonOutput::finish(const std::string& json, OutputFiles& files) const {
  stage(json, files);
  files.commit();
  print(json);
}

CLI::Option* add_json_option(CLI::App& command, JsonOutput& output, const std::string& what) {
  return command.add_option("--json", output.destination, what + " as JSON: on standard output (--json or --json -) "
                                                                 "instead of the text, or to FILE beside the text")
      ->expected(0, 1)
      ->default_str("-")
      ->type_name("[FILE]");
}

namespace {

constexpr std::size_t kFp32 = 4;

// A size of whole fp32 elements: 1000003B was once rounded down to 1000000 and reported so, and
// 1B to 0 (a bus bandwidth of 0 / 0).
std::size_t checked_size(const std::string& text, const std::string& what) {
  const std::size_t bytes = parse_size(text, what);
  if (bytes > limits::kMaxBytesPerRank) limits::exceeded(what + " " + text, "1 PiB per rank", limits::kMaxBytesReason);
  if (bytes % kFp32 != 0) parse::refuse(what, text, "is not a whole number of fp32 elements (4 B each)");
  return bytes;
}

}  // namespace

std::size_t chunk_elements(const std::string& text, std::size_t elem_size, const std::string& elem_name) {
  if (text.empty()) return 0;
  const std::size_t bytes = parse_size(text, "--chunk", BareNumber::refused);
  if (bytes % elem_size != 0)
    throw Error("--chunk " + text + ": " + std::to_string(bytes) + " B is not a whole number of " + elem_name +
                " elements (" + std::to_string(elem_size) + " B each)");
  return bytes / elem_size;
}

std::vector<std::size_t> fp32_sizes(const std::string& text, const std::string& option) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) return {checked_size(text, option)};
  const std::size_t lo = checked_size(text.substr(0, colon), option + " MIN");
  const std::size_t hi = checked_size(text.substr(colon + 1), option + " MAX");
  if (lo == 0) throw Error(option + " '" + text + "': MIN must be positive for a x2 sweep");
  if (lo > hi) throw Error(option + " '" + text + "': MIN is larger than MAX");
  std::vector<std::size_t> sizes;
  for (std::size_t s = lo;; s *= 2) {
    sizes.push_back(s);
    if (s > hi / 2) break;
  }
  return sizes;
}

}  // namespace colltune::cli

// Option rules and exit statuses (see options.hpp).
#include "options.hpp"

#include <cstdlib>
#include <iostream>
#include <string>

#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/limits.hpp"
#include "colltune/common/units.hpp"

namespace colltune::cli {
namespace {

// "-12" -> "-12", "007" -> "7"; an error text for anything that is not a decimal integer.
CLI::Validator decimal_integer(bool is_unsigned) {
  return CLI::Validator(
      [is_unsigned](std::string& text) -> std::string {
        std::size_t digits = text.size() > 1 && text[0] == '-' ? 1 : 0;
        if (digits == 1 && is_unsigned) return "must not be negative (got " + text + ")";
        if (text.size() == digits || text.find_first_not_of("0123456789", digits) != std::string::npos)
          return "expected a decimal integer, got '" + text + "'";
        const std::size_t first = text.find_first_not_of('0', digits);
        text.erase(digits, (first == std::string::npos ? text.size() - 1 : first) - digits);
        return "";
      },
      is_unsigned ? "NONNEGATIVE" : "", "decimal integer");
}

void apply_to(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    const std::string type = opt->get_type_name();
    if (type.rfind("UINT", 0) == 0) opt->transform(decimal_integer(true));
    else if (type.rfind("INT", 0) == 0) opt->transform(decimal_integer(false));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) apply_to(*sub);
}

}  // namespace

int exit_status(const std::exception& e) {
  if (dynamic_cast<const CheckFailure*>(&e) != nullptr) return kExitCheckFailed;
  if (dynamic_cast<const Error*>(&e) != nullptr) return kExitBadInput;
  return kExitInternal;
}

void apply_option_rules(CLI::App& app) { apply_to(app); }

bool under_mpi_launcher() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(var) != nullptr) return true;
  }
  return false;
}

void JsonOutput::write(const std::string& json) const {
  if (!destination) return;
  if (to_stdout()) {
    std::cout << json << "\n";
    return;
  }
  write_file_atomic(*destination, json + "\n");
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

std::size_t checked_size(const std::string& text, const std::string& what) {
  const std::size_t bytes = parse_size(text, what);
  if (bytes > limits::kMaxBytesPerRank) limits::exceeded(what + " " + text, "1 PiB per rank", limits::kMaxBytesReason);
  return bytes;
}

}  // namespace

std::vector<std::size_t> fp32_sizes(const std::string& text, const std::string& option) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) return {checked_size(text, option) / kFp32 * kFp32};
  const std::size_t lo = checked_size(text.substr(0, colon), option + " MIN");
  const std::size_t hi = checked_size(text.substr(colon + 1), option + " MAX");
  if (lo == 0) throw Error(option + " '" + text + "': MIN must be positive for a x2 sweep");
  if (lo > hi) throw Error(option + " '" + text + "': MIN is larger than MAX");
  std::vector<std::size_t> sizes;
  for (std::size_t s = lo;; s *= 2) {
    sizes.push_back(s / kFp32 * kFp32);
    if (s > hi / 2) break;
  }
  return sizes;
}

}  // namespace colltune::cli

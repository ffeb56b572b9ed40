#pragma once
// Internal: a small RFC 4180 CSV reader for the data tables compiled into sim/workload
// (published throughput, fitted fractions): a header row, fields optionally in double quotes
// ("" inside quotes is one quote), rows separated by newlines.
#include <string>
#include <string_view>
#include <vector>

namespace colltune::sim::detail {

struct CsvTable {
  std::string source;  // for messages
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  // The field of `row` under `column`; colltune::Error naming the source, row and column when
  // the column is missing.
  const std::string& at(std::size_t row, std::string_view column) const;
  // at() as a finite number; colltune::Error naming the field otherwise.
  double number(std::size_t row, std::string_view column) const;
};

// Throws colltune::Error naming `source` and the line for an unterminated quote or a row whose
// field count differs from the header's.
CsvTable parse_csv(std::string_view text, std::string_view source);

// `field` quoted when it holds a comma, a quote or a newline.
std::string csv_field(std::string_view field);

}  // namespace colltune::sim::detail

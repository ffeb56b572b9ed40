// The CSV reader of sim/workload's data tables (csv_table.hpp).
#include "csv_table.hpp"

#include <charconv>
#include <cmath>

#include "colltune/common/error.hpp"

namespace colltune::sim::detail {
namespace {

// Reads one record starting at `pos`; returns its fields and moves `pos` past its newline.
std::vector<std::string> read_record(std::string_view text, std::size_t& pos, std::string_view source, int line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (; pos < text.size(); ++pos) {
    const char c = text[pos];
    if (quoted) {
      if (c != '"') fields.back() += c;
      else if (pos + 1 < text.size() && text[pos + 1] == '"') fields.back() += '"', ++pos;
      else quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else if (c == '\n') {
      ++pos;
      return fields;
    } else if (c != '\r') {
      fields.back() += c;
    }
  }
  if (quoted) throw Error(std::string(source) + ":" + std::to_string(line) + ": unterminated quoted field");
  return fields;
}

}  // namespace

CsvTable parse_csv(std::string_view text, std::string_view source) {
  CsvTable table;
  table.source = std::string(source);
  std::size_t pos = 0;
  int line = 1;
  table.header = read_record(text, pos, source, line);
  while (pos < text.size()) {
    ++line;
    std::vector<std::string> row = read_record(text, pos, source, line);
    if (row.size() == 1 && row[0].empty()) continue;  // a blank line
    if (row.size() != table.header.size())
      throw Error(table.source + ":" + std::to_string(line) + ": " + std::to_string(row.size()) + " fields, the header has " +
                  std::to_string(table.header.size()));
    table.rows.push_back(std::move(row));
  }
  return table;
}

const std::string& CsvTable::at(std::size_t row, std::string_view column) const {
  for (std::size_t c = 0; c < header.size(); ++c)
    if (header[c] == column) return rows.at(row)[c];
  throw Error(source + ": no column '" + std::string(column) + "'");
}

double CsvTable::number(std::size_t row, std::string_view column) const {
  const std::string& field = at(row, column);
  double value = 0;
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (ec != std::errc() || end != field.data() + field.size() || !std::isfinite(value))
    throw Error(source + ": row " + std::to_string(row + 2) + ", " + std::string(column) + " '" + field +
                "' is not a number");
  return value;
}

std::string csv_field(std::string_view field) {
  if (field.find_first_of(",\"\n") == std::string_view::npos) return std::string(field);
  std::string out = "\"";
  for (char c : field) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace colltune::sim::detail

#pragma once
// Helpers of the doc-drift tests: the docs/ pages as text, numbers as the pages print them.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace colltune::docs_test {

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline std::string page(const std::string& name) { return read_text(std::string(COLLTUNE_DOCS) + "/" + name); }

// "19.5", "2039", "14.0625": as the tables write a figure; "–" for 0 (absent).
inline std::string num(double v, bool dash_for_zero = false) {
  if (dash_for_zero && v == 0) return "–";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// The body of section `heading` ("## GPUs") up to the next heading of the same level.
inline std::string section(const std::string& text, const std::string& heading) {
  const std::size_t at = text.find("\n" + heading + "\n");
  if (at == std::string::npos) return "";
  const std::size_t body = at + heading.size() + 2;
  const std::size_t end = text.find("\n## ", body);
  return text.substr(body, end == std::string::npos ? std::string::npos : end - body);
}

// Rows of the markdown tables in `body`: lines that start with "|", less each table's header
// and separator line.
inline std::size_t table_rows(const std::string& body) {
  std::size_t lines = 0, separators = 0;
  std::istringstream in(body);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("|---", 0) == 0) ++separators;
    else if (line.rfind("|", 0) == 0) ++lines;
  }
  return lines - separators;
}

}  // namespace colltune::docs_test

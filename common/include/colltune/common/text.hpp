#pragma once
// Line and word splitting for the text formats colltune reads (nccl-tests logs, nvidia-smi
// output): one definition, so every reader treats CRLF files and runs of blanks alike.
#include <sstream>
#include <string>
#include <vector>

namespace colltune::text {

// The lines of `text`, without their '\n' and a trailing '\r' (files from Windows editors).
inline std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out.push_back(std::move(line));
  }
  return out;
}

// The words of a line: runs of non-blank characters.
inline std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(std::move(w));
  return out;
}

}  // namespace colltune::text

#pragma once
// All the files one command writes, as one unit (docs/hardening.md "Output files"): -o, --out,
// --json FILE, --html, --trace. Each target is declared, and checked, before the command's work
// starts, so a typo in the last option fails in a second and not after a long run; at the end
// every file is written to a temporary beside its target, and only when all of them are written
// are they renamed into place (a directory set switched by FileSetWriter). A failure at any
// point leaves every target as it was: an error never leaves some of a command's files written.
// Text files are checked for non-finite numbers on the way (finite.hpp).
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace colltune {

class OutputFiles {
 public:
  OutputFiles();
  ~OutputFiles();
  OutputFiles(const OutputFiles&) = delete;
  OutputFiles& operator=(const OutputFiles&) = delete;

  // Declares a single file for `option` (its name in messages). Throws colltune::Error
  // "OPTION PATH: REASON" when it cannot be written: its folder is missing, not a folder or not
  // writable; the path is a folder or not a regular file (a FIFO, /dev/null: colltune replaces
  // its files whole); another option names the same file.
  void file(std::string_view option, const std::filesystem::path& path);
  // Declares a directory written as a FileSetWriter set holding `names` (tune --out, sweep --out).
  // The same checks; a missing directory needs a writable nearest existing folder above it.
  void directory(std::string_view option, const std::filesystem::path& dir, const std::vector<std::string>& names);

  // The content of a declared file, or of one name of the declared directory.
  void stage(const std::filesystem::path& path, std::string content);
  void stage_in_directory(const std::string& name, std::string content);

  // Writes everything staged; returns the paths written (the files in declaration order, then
  // the directory's). Throws colltune::Error, leaving every target unchanged, when one cannot be
  // written; InternalError when a text file holds a non-finite number.
  std::vector<std::filesystem::path> commit();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace colltune

// A command's output files as one unit (output_files.hpp).
#include "colltune/common/output_files.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <system_error>

#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/finite.hpp"
#include "colltune/common/signals.hpp"
#include "file_util.hpp"

namespace colltune {
namespace fs = std::filesystem;

namespace {

struct Target {
  std::string option;
  fs::path path;
  std::optional<std::string> content;
};

fs::path folder_of(const fs::path& path) { return path.parent_path().empty() ? fs::path(".") : path.parent_path(); }

// "--json out/x.json: " for messages.
std::string named(std::string_view option, const fs::path& path) { return std::string(option) + " " + path.string() + ": "; }

// `folder` exists, is a folder, and this process may create files in it.
void check_folder(std::string_view option, const fs::path& path, const fs::path& folder) {
  struct stat st {};
  if (::stat(folder.c_str(), &st) != 0)
    throw Error(named(option, path) + "cannot use folder " + folder.string() + " (" + detail::errno_text(errno) + ")");
  if (!S_ISDIR(st.st_mode)) throw Error(named(option, path) + folder.string() + " is not a folder");
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    throw Error(named(option, path) + "cannot write in " + folder.string() + " (" + detail::errno_text(errno) + ")");
}

// A path that may be replaced whole: absent, or a regular file (not a folder, FIFO or device).
void check_replaceable(std::string_view option, const fs::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;
  if (S_ISLNK(st.st_mode) && ::stat(path.c_str(), &st) != 0) return;  // a dangling link is replaced
  if (S_ISDIR(st.st_mode)) throw Error(named(option, path) + "is a folder, expected a file");
  if (!S_ISREG(st.st_mode))
    throw Error(named(option, path) + "is not a regular file (colltune writes its files whole, by renaming a "
                "temporary over them)");
}

// The nearest existing folder at or above `dir`.
fs::path existing_ancestor(fs::path dir) {
  std::error_code ec;
  while (!dir.empty() && !fs::exists(dir, ec) && dir != dir.parent_path()) dir = dir.parent_path();
  return dir.empty() ? fs::path(".") : dir;
}

fs::path identity(const fs::path& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? path.lexically_normal() : p;
}

// A text file must not carry "inf" or "nan"; JSON (whose strings may) was checked as a document.
void check_content(const fs::path& path, const std::string& content) {
  const std::size_t first = content.find_first_not_of(" \t\r\n");
  const bool json = first != std::string::npos && (content[first] == '{' || content[first] == '[');
  if (!json) finite::check_text(content, path.string());
}

}  // namespace

struct OutputFiles::State {
  std::vector<Target> files;
  std::string dir_option;
  fs::path dir;
  std::vector<std::pair<std::string, std::string>> dir_files;

  void check_unique(std::string_view option, const fs::path& path) const {
    for (const Target& t : files)
      if (identity(t.path) == identity(path))
        throw Error(named(option, path) + t.option + " names the same file");
  }
};

OutputFiles::OutputFiles() : s_(std::make_unique<State>()) {}
OutputFiles::~OutputFiles() = default;

void OutputFiles::file(std::string_view option, const fs::path& path) {
  if (path.empty()) throw Error(std::string(option) + ": an empty file name");
  s_->check_unique(option, path);
  check_folder(option, path, folder_of(path));
  check_replaceable(option, path);
  s_->files.push_back({std::string(option), path, std::nullopt});
}

void OutputFiles::directory(std::string_view option, const fs::path& dir, const std::vector<std::string>& names) {
  if (dir.empty()) throw Error(std::string(option) + ": an empty folder name");
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) throw Error(named(option, dir) + "is not a folder");
    check_folder(option, dir, dir);
    for (const std::string& name : names)
      if (fs::is_directory(fs::symlink_status(dir / name, ec)))
        throw Error(named(option, dir) + (dir / name).string() + " is a folder; colltune writes a file there");
  } else {
    check_folder(option, dir, existing_ancestor(dir));
  }
  for (const Target& t : s_->files)
    if (identity(t.path).parent_path() == identity(dir))
      for (const std::string& name : names)
        if (identity(t.path).filename() == name) throw Error(named(t.option, t.path) + std::string(option) + " writes that file");
  s_->dir_option = std::string(option);
  s_->dir = dir;
}

void OutputFiles::stage(const fs::path& path, std::string content) {
  for (Target& t : s_->files)
    if (t.path == path) {
      t.content = std::move(content);
      return;
    }
  throw finite::InternalError("OutputFiles: " + path.string() + " was not declared");
}

void OutputFiles::stage_in_directory(const std::string& name, std::string content) {
  if (s_->dir.empty()) throw finite::InternalError("OutputFiles: no directory declared for " + name);
  s_->dir_files.emplace_back(name, std::move(content));
}

std::vector<fs::path> OutputFiles::commit() {
  for (const Target& t : s_->files)
    if (t.content) check_content(t.path, *t.content);
  for (const auto& [name, content] : s_->dir_files) check_content(s_->dir / name, content);
  const SignalDeferral signals;  // a signal now ends the process after the temporaries are gone
  detail::Temporaries temporaries;
  for (const Target& t : s_->files)
    if (t.content) temporaries.write(t.path, *t.content);
  std::vector<fs::path> written;
  if (!s_->dir_files.empty()) {
    FileSetWriter writer(s_->dir);
    for (const auto& [name, content] : s_->dir_files) writer.stage(name, content);
    if (SignalDeferral::pending() != 0) return {};  // ~writer, ~temporaries clean up; then the signal
    written = writer.commit();
  }
  // Renames do not fail for lack of space; the set is complete from here on.
  std::vector<fs::path> files = temporaries.rename_all();
  files.insert(files.end(), written.begin(), written.end());
  return files;
}

}  // namespace colltune

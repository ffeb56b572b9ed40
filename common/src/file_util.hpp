#pragma once
// POSIX file helpers shared by write_file_atomic() and FileSetWriter: errors become
// colltune::Error lines that name the file the user asked for (not a temporary) and the reason.
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace colltune::detail {

std::string errno_text(int err);

// Creates `tmp` (which must not exist), writes `content`, fsyncs and closes it. On failure
// removes `tmp` and throws Error "SHOWN: cannot write (reason)".
void write_new_file(const std::filesystem::path& tmp, std::string_view content, const std::filesystem::path& shown);

// fsync of a directory, so a rename or link inside it survives a crash (best effort: some file
// systems refuse it; the rename itself is still atomic).
void sync_directory(const std::filesystem::path& dir);

// True when the process `pid` no longer exists (it cannot own a temporary any more).
bool process_gone(long pid);

// Removes ".NAME.tmp.PID.N" files in `dir` whose PID is gone: temporaries of writers that were
// killed. `name` empty: any NAME.
void remove_dead_temporaries(const std::filesystem::path& dir, std::string_view name);

// Temporaries ".NAME.tmp.PID.N" written beside their targets, then renamed over them together
// (write_file_atomic, OutputFiles). Those not renamed are removed on destruction.
class Temporaries {
 public:
  Temporaries() = default;
  Temporaries(const Temporaries&) = delete;
  Temporaries& operator=(const Temporaries&) = delete;
  ~Temporaries();
  // Removes dead temporaries of `target`, then writes `content` to a new one beside it. Throws
  // Error "TARGET: cannot write (reason)".
  void write(const std::filesystem::path& target, std::string_view content);
  // Renames every temporary over its target, in order; returns the targets. Throws Error
  // "TARGET: cannot rename into place (reason)" (the others not yet renamed are removed).
  std::vector<std::filesystem::path> rename_all();

 private:
  std::vector<std::pair<std::filesystem::path, std::filesystem::path>> pending_;  // temporary, target
};

}  // namespace colltune::detail

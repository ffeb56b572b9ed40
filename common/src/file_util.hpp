#pragma once
// POSIX file helpers shared by write_file_atomic() and FileSetWriter: errors become
// colltune::Error lines that name the file the user asked for (not a temporary) and the reason.
#include <filesystem>
#include <string>
#include <string_view>

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

}  // namespace colltune::detail

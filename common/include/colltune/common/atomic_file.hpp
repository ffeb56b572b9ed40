#pragma once
// Files colltune writes appear whole or not at all, also when the process is interrupted or
// killed, the disk fills up, or two colltune processes write to one place.
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace colltune {

// Writes `content` to `path` atomically: a temporary ".NAME.tmp.PID.N" beside it is written,
// flushed and renamed over `path`. SIGINT/SIGTERM/SIGHUP during the write remove the temporary
// before the process ends by the signal; temporaries left by killed processes (SIGKILL) are
// removed by the next write of the same file. Throws colltune::Error naming `path` and the
// reason ("No space left on device") on failure, leaving nothing behind.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);

// A set of files that changes as one unit in directory `dir` (docs/hardening.md, "Output
// files"). Each file of the set is dir/NAME, a symbolic link to ".colltune/current/NAME";
// dir/.colltune/current links to a generation directory that holds one complete set. commit()
// writes a new generation, then renames a new `current` link over the old one: the single
// atomic step at which readers move from the complete old set to the complete new one.
//  - Only dir/NAME (for the names staged) and dir/.colltune are touched; any other file in
//    dir is never read, moved or removed. A regular file already at dir/NAME (an older
//    colltune's output, or the user's) is taken into the set as the old version, then replaced
//    by its link; a directory or a foreign link there is refused before anything changes.
//  - One writer at a time: an exclusive lock (flock on dir/.colltune/lock) held from
//    construction to destruction; a second writer waits up to limits::kOutputLockWaitS, then
//    fails naming the process that holds it.
//  - Generations left by a killed writer are removed by the next one.
//  - SIGINT/SIGTERM/SIGHUP are held off from construction to destruction: if one arrives
//    before the switch, the new generation is removed and the old set stays; the process then
//    ends by that signal.
//  - A failure (full disk: "dir/NAME: cannot write (No space left on device)") leaves the old
//    set, and removes `dir` again if this writer created it.
class FileSetWriter {
 public:
  // Creates `dir` (and missing parents) when absent, and takes the lock.
  explicit FileSetWriter(std::filesystem::path dir);
  FileSetWriter(const FileSetWriter&) = delete;
  FileSetWriter& operator=(const FileSetWriter&) = delete;
  // Without commit(): removes everything this writer wrote; the old set stays as it was.
  ~FileSetWriter();

  // Writes one file of the new set (not visible until commit()).
  void stage(const std::string& filename, std::string_view content);
  // Switches dir to the staged set; returns dir/NAME for each staged name, in staging order.
  std::vector<std::filesystem::path> commit();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// Reads a whole regular file; throws colltune::Error "PATH: cannot read (reason)", "PATH: is a
// directory", "PATH: not a regular file" (a FIFO is refused without waiting for a writer; a
// device such as /dev/zero is never read), or "PATH: above the limit" beyond
// limits::kMaxInputFileBytes.
std::string read_file(const std::filesystem::path& path);

}  // namespace colltune

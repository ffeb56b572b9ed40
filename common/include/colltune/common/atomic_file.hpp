#pragma once
// Files colltune writes appear whole or not at all: content goes to a temporary file in the
// same directory, is flushed, then renamed over the destination.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace colltune {

// Writes `content` to `path` atomically. Throws colltune::Error naming the path on failure;
// the temporary file is removed in that case.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);

// A set of files committed together: stage() writes each to a hidden temporary beside its
// destination; commit() renames them all. If the object is destroyed without commit() (an
// exception, an interrupted run), the temporaries are removed and no destination is touched.
class FileSetWriter {
 public:
  explicit FileSetWriter(std::filesystem::path dir);
  FileSetWriter(const FileSetWriter&) = delete;
  FileSetWriter& operator=(const FileSetWriter&) = delete;
  ~FileSetWriter();

  void stage(const std::string& filename, std::string_view content);
  // Renames every staged file into place; returns the final paths. All or nothing: if one
  // rename fails, the files already placed are taken back and any originals restored.
  std::vector<std::filesystem::path> commit();

 private:
  std::filesystem::path dir_;
  std::vector<std::pair<std::filesystem::path, std::filesystem::path>> staged_;  // temp, final
  bool committed_ = false;
};

// Reads a whole file; throws colltune::Error "PATH: cannot read (reason)", or "PATH: above the
// limit of 256 MiB per input file" (limits::kMaxInputFileBytes; /dev/zero is refused, not read
// forever).
std::string read_file(const std::filesystem::path& path);

}  // namespace colltune

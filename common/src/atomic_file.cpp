#include "colltune/common/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <system_error>

#include "colltune/common/error.hpp"
#include "colltune/common/limits.hpp"
#include "colltune/common/units.hpp"

namespace colltune {
namespace fs = std::filesystem;
namespace {

// A name beside `final` that no concurrent writer (thread or process) will pick.
fs::path temp_beside(const fs::path& final) {
  static std::atomic<unsigned> counter{0};
  std::string name = ".";
  name += final.filename().string();
  name += ".tmp.";
  name += std::to_string(::getpid());
  name += '.';
  name += std::to_string(counter.fetch_add(1));
  return final.parent_path() / name;
}

void write_and_flush(const fs::path& path, std::string_view content) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw Error(path.string() + ": cannot write (" + std::error_code(errno, std::generic_category()).message() + ")");
  const bool ok = std::fwrite(content.data(), 1, content.size(), f) == content.size() && std::fflush(f) == 0 &&
                  ::fsync(fileno(f)) == 0;
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) {
    std::error_code ignored;
    fs::remove(path, ignored);
    throw Error(path.string() + ": write failed");
  }
}

}  // namespace

void write_file_atomic(const fs::path& path, std::string_view content) {
  const fs::path tmp = temp_beside(path);
  write_and_flush(tmp, content);
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error(path.string() + ": cannot rename into place (" + ec.message() + ")");
  }
}

FileSetWriter::FileSetWriter(fs::path dir) : dir_(std::move(dir)) {
  std::error_code ec;
  if (!fs::is_directory(dir_, ec)) throw Error(dir_.string() + ": not a directory");
}

FileSetWriter::~FileSetWriter() {
  if (committed_) return;
  std::error_code ignored;
  for (const auto& [tmp, final] : staged_) fs::remove(tmp, ignored);
}

void FileSetWriter::stage(const std::string& filename, std::string_view content) {
  const fs::path final = dir_ / filename;
  const fs::path tmp = temp_beside(final);
  write_and_flush(tmp, content);
  staged_.emplace_back(tmp, final);
}

// All or nothing: each destination that already exists is first moved aside; if any rename
// fails, the files already placed are removed and the originals restored before the error.
std::vector<fs::path> FileSetWriter::commit() {
  std::vector<std::pair<fs::path, fs::path>> placed;  // final, backup ("" when there was none)
  auto roll_back = [&placed]() {
    std::error_code ignored;
    for (auto it = placed.rbegin(); it != placed.rend(); ++it) {
      fs::remove(it->first, ignored);
      if (!it->second.empty()) fs::rename(it->second, it->first, ignored);
    }
  };
  for (const auto& [tmp, final] : staged_) {
    std::error_code ec;
    std::error_code absent;  // is_regular_file reports "no such file" here; that is fine
    fs::path backup;
    if (fs::is_regular_file(final, absent)) {
      backup = temp_beside(final);
      fs::rename(final, backup, ec);
    }
    if (!ec) fs::rename(tmp, final, ec);
    if (ec) {
      if (!backup.empty()) {
        std::error_code ignored;
        fs::rename(backup, final, ignored);
      }
      roll_back();
      throw Error(final.string() + ": cannot rename into place (" + ec.message() + ")");
    }
    placed.emplace_back(final, backup);
  }
  std::vector<fs::path> out;
  for (const auto& [final, backup] : placed) {
    std::error_code ignored;
    if (!backup.empty()) fs::remove(backup, ignored);
    out.push_back(final);
  }
  committed_ = true;
  return out;
}

std::string read_file(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw Error(path.string() + ": is a directory, expected a file");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path.string() + ": cannot read (" + std::error_code(errno, std::generic_category()).message() + ")");
  auto too_large = [&] {
    ::close(fd);
    limits::exceeded(path.string(), format_bytes(limits::kMaxInputFileBytes) + " per input file",
                     limits::kMaxInputFileReason);
  };
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<std::size_t>(st.st_size) > limits::kMaxInputFileBytes)
    too_large();  // a regular file says its size; devices and pipes are read up to the limit
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw Error(path.string() + ": cannot read (" + std::error_code(err, std::generic_category()).message() + ")");
    }
    if (text.size() + static_cast<std::size_t>(n) > limits::kMaxInputFileBytes) too_large();
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

}  // namespace colltune

// write_file_atomic(), read_file() and the POSIX helpers behind them and FileSetWriter.
#include "colltune/common/atomic_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <optional>
#include <system_error>

#include "colltune/common/error.hpp"
#include "colltune/common/limits.hpp"
#include "colltune/common/parse.hpp"
#include "colltune/common/signals.hpp"
#include "colltune/common/units.hpp"
#include "file_util.hpp"

namespace colltune {
namespace fs = std::filesystem;

namespace detail {

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

void write_new_file(const fs::path& tmp, std::string_view content, const fs::path& shown) {
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(shown.string() + ": cannot write (" + errno_text(errno) + ")");
  int err = 0;
  for (std::size_t done = 0; done < content.size() && err == 0;) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n > 0) done += static_cast<std::size_t>(n);
    else if (n < 0 && errno != EINTR) err = errno;
  }
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    throw Error(shown.string() + ": cannot write (" + errno_text(err) + ")");
  }
}

void sync_directory(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

bool process_gone(long pid) { return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

// ".NAME.tmp.PID.N" -> PID, or -1 when `entry` is not such a name (for `name`, when given).
long temporary_owner(std::string_view entry, std::string_view name) {
  const std::size_t tmp = entry.rfind(".tmp.");
  if (entry.size() < 2 || entry[0] != '.' || tmp == std::string_view::npos || tmp < 2) return -1;
  if (!name.empty() && entry.substr(1, tmp - 1) != name) return -1;
  const std::string_view rest = entry.substr(tmp + 5);  // "PID.N"
  const std::size_t dot = rest.find('.');
  if (dot == std::string_view::npos) return -1;
  const std::optional<long> pid = parse::try_integer<long>(rest.substr(0, dot));
  const std::optional<unsigned long> n = parse::try_integer<unsigned long>(rest.substr(dot + 1));
  return pid && n ? *pid : -1;
}

void remove_dead_temporaries(const fs::path& dir, std::string_view name) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string entry = it->path().filename().string();
    const long pid = temporary_owner(entry, name);
    if (pid > 0 && process_gone(pid)) {
      std::error_code ignored;
      if (it->is_regular_file(ignored)) fs::remove(it->path(), ignored);
    }
  }
}

}  // namespace detail

namespace {

// A name beside `final` that no concurrent writer (thread or process) will pick.
fs::path temp_beside(const fs::path& final) {
  static std::atomic<unsigned> counter{0};
  std::string name = ".";  // built by appending: GCC 12 warns (-Wrestrict) on "." + string
  name += final.filename().string();
  name += ".tmp.";
  name += std::to_string(::getpid());
  name += '.';
  name += std::to_string(counter.fetch_add(1));
  return final.parent_path() / name;
}

}  // namespace

namespace detail {

Temporaries::~Temporaries() {
  std::error_code ignored;
  for (const auto& [tmp, target] : pending_) fs::remove(tmp, ignored);
}

void Temporaries::write(const fs::path& target, std::string_view content) {
  const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  remove_dead_temporaries(dir, target.filename().string());
  const fs::path tmp = temp_beside(target);
  write_new_file(tmp, content, target);
  pending_.emplace_back(tmp, target);
}

std::vector<fs::path> Temporaries::rename_all() {
  std::vector<fs::path> done;
  while (!pending_.empty()) {
    const auto [tmp, target] = pending_.front();
    std::error_code ec;
    fs::rename(tmp, target, ec);
    if (ec) throw Error(target.string() + ": cannot rename into place (" + ec.message() + ")");
    pending_.erase(pending_.begin());
    done.push_back(target);
  }
  return done;
}

}  // namespace detail

void write_file_atomic(const fs::path& path, std::string_view content) {
  const SignalDeferral signals;  // a signal now ends the process after the temporary is gone
  detail::Temporaries temporary;
  temporary.write(path, content);
  if (SignalDeferral::pending() != 0) return;  // ~Temporaries removes it, ~SignalDeferral delivers the signal
  temporary.rename_all();
}

std::string read_file(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw Error(path.string() + ": is a directory, expected a file");
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below, as devices are.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw Error(path.string() + ": cannot read (" + detail::errno_text(errno) + ")");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path.string() + ": " + (S_ISDIR(st.st_mode) ? "is a directory, expected a file" :
                "not a regular file (a pipe, FIFO or device: colltune reads its input files whole; save it to a file)"));
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  auto too_large = [&] {
    ::close(fd);
    limits::exceeded(path.string(), format_bytes(limits::kMaxInputFileBytes) + " per input file",
                     limits::kMaxInputFileReason);
  };
  if (static_cast<std::size_t>(st.st_size) > limits::kMaxInputFileBytes) too_large();  // before reading it
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw Error(path.string() + ": cannot read (" + detail::errno_text(err) + ")");
    }
    if (text.size() + static_cast<std::size_t>(n) > limits::kMaxInputFileBytes) too_large();
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

}  // namespace colltune

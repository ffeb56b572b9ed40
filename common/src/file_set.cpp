// FileSetWriter (see atomic_file.hpp). Layout of an output directory DIR:
//   DIR/NAME                      symlink -> .colltune/current/NAME, one per file of the set
//   DIR/.colltune/lock            flock()ed by the one writer; holds its pid
//   DIR/.colltune/current         symlink -> gen.PID.N, the live generation
//   DIR/.colltune/gen.PID.N/NAME  the files of one complete set
// A commit: write gen.PID.N (each file fsynced), make sure every DIR/NAME link exists, then
// rename a new `current` link over the old one (the atomic step), then remove the old
// generation. Whatever instant a reader or a kill picks, `current` names a complete set.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <optional>
#include <thread>

#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/limits.hpp"
#include "colltune/common/signals.hpp"
#include "file_util.hpp"

namespace colltune {
namespace fs = std::filesystem;
using detail::errno_text;

namespace {

constexpr const char* kStateDir = ".colltune";
constexpr const char* kGenPrefix = "gen.";

std::string next_generation_name() {
  static std::atomic<unsigned> counter{0};
  return kGenPrefix + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
}

// Where `link` points, or nullopt when it is not a symbolic link.
std::optional<std::string> link_target(const fs::path& link) {
  std::error_code ec;
  const fs::path target = fs::read_symlink(link, ec);
  if (ec) return std::nullopt;
  return target.string();
}

std::string set_link_target(const std::string& name) { return std::string(kStateDir) + "/current/" + name; }

// Points `link` at `target` in one step: a fresh link beside it renamed over it.
void replace_link(const fs::path& link, const std::string& target, const fs::path& scratch_dir) {
  const fs::path tmp = scratch_dir / ("link.new." + std::to_string(::getpid()));
  ::unlink(tmp.c_str());
  if (::symlink(target.c_str(), tmp.c_str()) != 0 || ::rename(tmp.c_str(), link.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw Error(link.string() + ": cannot link into place (" + errno_text(err) + ")");
  }
}

void checkpoint() {
  if (SignalDeferral::pending() != 0) throw Error("interrupted by signal " + std::to_string(SignalDeferral::pending()));
}

}  // namespace

struct FileSetWriter::State {
  fs::path dir, state, gen;
  std::vector<std::string> names;
  std::vector<fs::path> created_dirs;   // dir and parents this writer created, outermost first
  std::vector<fs::path> created_links;  // DIR/NAME links made by this writer
  bool created_state = false;
  bool committed = false;
  int lock_fd = -1;
  SignalDeferral signals;  // outlives the clean-up in ~FileSetWriter, then delivers a held signal

  void create_dirs();
  void lock();
  void remove_stale_generations() const;
  std::optional<std::string> current_generation() const {
    return link_target(state / "current");
  }
  void check_destination(const std::string& name) const;
  void adopt_plain_files();
  void make_links();
  void switch_to(const std::string& generation) const;
  void remove_generation(const std::string& generation) const;
  void roll_back();
};

void FileSetWriter::State::create_dirs() {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) throw Error(dir.string() + ": exists and is not a directory");
  for (fs::path p = dir; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    created_dirs.insert(created_dirs.begin(), p);
    if (p == p.parent_path()) break;
  }
  fs::create_directories(dir, ec);
  if (ec) {
    created_dirs.clear();
    throw Error(dir.string() + ": cannot create the output directory (" + ec.message() + ")");
  }
  if (::mkdir(state.c_str(), 0755) == 0) {
    created_state = true;
  } else if (errno != EEXIST || !fs::is_directory(state, ec)) {
    throw Error(state.string() + ": cannot create colltune's state directory (" + errno_text(errno) + ")");
  }
}

// flock() the lock file; waits for another writer up to limits::kOutputLockWaitS. The lock file
// is never removed while it may be in use, and the inode check catches the one case where it
// is (a first writer that failed and took its fresh directory away).
void FileSetWriter::State::lock() {
  const fs::path path = state / "lock";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limits::kOutputLockWaitS);
  for (;;) {
    checkpoint();
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw Error(path.string() + ": cannot open the lock (" + errno_text(errno) + ")");
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      struct stat held {}, named {};
      if (::fstat(fd, &held) == 0 && ::stat(path.c_str(), &named) == 0 && held.st_ino == named.st_ino) {
        lock_fd = fd;
        const std::string pid = std::to_string(::getpid()) + "\n";
        if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, pid.data(), pid.size(), 0);
        return;
      }
    }
    char holder[32] = {};
    (void)!::pread(fd, holder, sizeof holder - 1, 0);
    ::close(fd);
    if (std::chrono::steady_clock::now() > deadline) {
      std::string pid(holder);
      while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
      throw Error(dir.string() + ": another colltune process (pid " + (pid.empty() ? "?" : pid) +
                  ") is writing its files here; gave up after " +
                  std::to_string(static_cast<int>(limits::kOutputLockWaitS)) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Under the lock no other writer exists, so every generation but the live one is a leftover
// of a writer that was killed; so are the old-style ".NAME.tmp.PID.N" files of dead writers.
void FileSetWriter::State::remove_stale_generations() const {
  const std::optional<std::string> live = current_generation();
  std::error_code ec;
  for (fs::directory_iterator it(state, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const bool stale_gen = name.rfind(kGenPrefix, 0) == 0 && name != live;
    const bool stale_link = name.rfind("link.new.", 0) == 0 || name.rfind("current.new.", 0) == 0;
    std::error_code ignored;
    if (stale_gen) fs::remove_all(it->path(), ignored);
    if (stale_link) fs::remove(it->path(), ignored);
  }
  detail::remove_dead_temporaries(dir, "");
}

// DIR/NAME may be absent, a regular file, or our link; anything else is the user's and stays.
void FileSetWriter::State::check_destination(const std::string& name) const {
  if (name.empty() || name.find('/') != std::string::npos || name[0] == '.')
    throw Error("output file name '" + name + "': expected a plain name");
  const fs::path path = dir / name;
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  if (ec || st.type() == fs::file_type::not_found || st.type() == fs::file_type::regular) return;
  if (st.type() == fs::file_type::symlink && link_target(path) == set_link_target(name)) return;
  const char* what = st.type() == fs::file_type::directory ? "a directory"
                     : st.type() == fs::file_type::symlink ? "a symbolic link colltune did not make"
                                                           : "not a regular file";
  throw Error(path.string() + ": exists and is " + what + "; nothing was written (move it away)");
}

// Regular files at DIR/NAME (an older colltune's output, or the user's) become the old
// generation, by hard links, before their names turn into links: every read sees the same bytes.
void FileSetWriter::State::adopt_plain_files() {
  std::vector<std::string> plain;
  for (const std::string& name : names)
    if (fs::is_regular_file(fs::symlink_status(dir / name))) plain.push_back(name);
  if (plain.empty()) return;
  const std::string adopted = next_generation_name();
  const fs::path gen_dir = state / adopted;
  if (::mkdir(gen_dir.c_str(), 0755) != 0) throw Error(gen_dir.string() + ": cannot create (" + errno_text(errno) + ")");
  const std::optional<std::string> live = current_generation();
  for (const std::string& name : names) {
    const fs::path from = std::find(plain.begin(), plain.end(), name) != plain.end()
                              ? dir / name
                              : (live ? state / *live / name : fs::path());
    std::error_code ec;
    if (!from.empty() && fs::exists(from, ec) && ::link(from.c_str(), (gen_dir / name).c_str()) != 0)
      throw Error((dir / name).string() + ": cannot take the existing file into the set (" + errno_text(errno) + ")");
  }
  detail::sync_directory(gen_dir);
  switch_to(adopted);
  if (live) remove_generation(*live);
  for (const std::string& name : plain) replace_link(dir / name, set_link_target(name), state);
}

void FileSetWriter::State::make_links() {
  for (const std::string& name : names) {
    const fs::path path = dir / name;
    if (link_target(path) == set_link_target(name)) continue;
    if (::symlink(set_link_target(name).c_str(), path.c_str()) != 0)
      throw Error(path.string() + ": cannot create the link to the set (" + errno_text(errno) + ")");
    created_links.push_back(path);
  }
  detail::sync_directory(dir);
}

// The atomic step: rename a fresh `current` link over the old one.
void FileSetWriter::State::switch_to(const std::string& generation) const {
  const fs::path tmp = state / ("current.new." + std::to_string(::getpid()));
  ::unlink(tmp.c_str());
  if (::symlink(generation.c_str(), tmp.c_str()) != 0 || ::rename(tmp.c_str(), (state / "current").c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw Error(dir.string() + ": cannot switch to the new files (" + errno_text(err) + ")");
  }
  detail::sync_directory(state);
}

void FileSetWriter::State::remove_generation(const std::string& generation) const {
  if (generation.rfind(kGenPrefix, 0) != 0 || generation.find('/') != std::string::npos) return;
  std::error_code ignored;
  fs::remove_all(state / generation, ignored);
}

// Undoes this writer's work: its generation, its links, and the directories it created
// (state directory and output directory, only when nothing else is in them).
void FileSetWriter::State::roll_back() {
  std::error_code ignored;
  if (!gen.empty()) fs::remove_all(gen, ignored);
  for (const fs::path& link : created_links) fs::remove(link, ignored);
  if (created_state && !current_generation()) {
    fs::remove(state / "lock", ignored);
    fs::remove(state, ignored);
  }
  for (auto it = created_dirs.rbegin(); it != created_dirs.rend(); ++it) fs::remove(*it, ignored);  // empty only
}

FileSetWriter::FileSetWriter(fs::path dir) : s_(std::make_unique<State>()) {
  s_->dir = std::move(dir);
  s_->state = s_->dir / kStateDir;
  try {
    s_->create_dirs();
    s_->lock();
    s_->remove_stale_generations();
    s_->gen = s_->state / next_generation_name();
    if (::mkdir(s_->gen.c_str(), 0755) != 0) {
      const fs::path failed = s_->gen;
      s_->gen.clear();
      throw Error(failed.string() + ": cannot create (" + errno_text(errno) + ")");
    }
  } catch (...) {
    s_->roll_back();
    if (s_->lock_fd >= 0) ::close(s_->lock_fd);
    throw;
  }
}

FileSetWriter::~FileSetWriter() {
  if (!s_->committed) s_->roll_back();
  if (s_->lock_fd >= 0) ::close(s_->lock_fd);
}

void FileSetWriter::stage(const std::string& filename, std::string_view content) {
  checkpoint();
  s_->check_destination(filename);
  if (std::find(s_->names.begin(), s_->names.end(), filename) != s_->names.end())
    throw Error("output file " + filename + " staged twice");
  detail::write_new_file(s_->gen / filename, content, s_->dir / filename);
  s_->names.push_back(filename);
  checkpoint();
}

std::vector<fs::path> FileSetWriter::commit() {
  if (s_->committed) throw Error(s_->dir.string() + ": this file set was already committed");
  detail::sync_directory(s_->gen);
  checkpoint();
  s_->adopt_plain_files();
  s_->make_links();
  checkpoint();  // the last moment an interruption keeps the old set
  s_->switch_to(s_->gen.filename().string());
  s_->committed = true;
  s_->remove_stale_generations();  // the old generation (and one adopt_plain_files() made)
  std::vector<fs::path> out;
  for (const std::string& name : s_->names) out.push_back(s_->dir / name);
  return out;
}

}  // namespace colltune

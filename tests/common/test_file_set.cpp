// FileSetWriter as one unit: a writer killed (SIGKILL, SIGINT, SIGTERM) at random points leaves
// the complete old set or the complete new one, and no temporaries (SIGKILL's are removed by the
// next writer); concurrent writers serialise; a full disk names the file and leaves no output
// directory behind; regular files at the names are taken over, other files are never touched.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"

namespace fs = std::filesystem;
using colltune::Error;
using colltune::FileSetWriter;
using colltune::read_file;

namespace {

const std::vector<std::string> kNames{"horovod.yaml", "horovod.env", "nccl.env", "nccl_tuner.conf", "colltune.json",
                                      "report.html"};

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("colltune_fileset_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Set `tag`: every file names its set and is large enough that writing takes a while.
std::string content(const std::string& tag, const std::string& name) {
  return tag + ":" + name + "\n" + std::string(32 * 1024, tag[0]);
}

void write_set(const fs::path& dir, const std::string& tag) {
  FileSetWriter w(dir);
  for (const std::string& name : kNames) w.stage(name, content(tag, name));
  w.commit();
}

// The tag of the set `dir` holds; fails the test when the files are not one complete set.
std::string set_tag(const fs::path& dir) {
  std::set<std::string> tags;
  for (const std::string& name : kNames) {
    const std::string text = read_file(dir / name);
    const std::string tag = text.substr(0, text.find(':'));
    EXPECT_EQ(text, content(tag, name)) << name << " is not a whole file of set " << tag;
    tags.insert(tag);
  }
  EXPECT_EQ(tags.size(), 1u) << "files of different sets in " << dir;
  return tags.empty() ? "" : *tags.begin();
}

// Entries besides the six links and colltune's lock, current link and live generation.
std::vector<std::string> leftovers(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n != ".colltune" && std::find(kNames.begin(), kNames.end(), n) == kNames.end()) out.push_back(n);
  }
  const std::string live = fs::read_symlink(dir / ".colltune" / "current").string();
  for (const auto& e : fs::directory_iterator(dir / ".colltune")) {
    const std::string n = e.path().filename().string();
    if (n != "lock" && n != "current" && n != live) out.push_back(".colltune/" + n);
  }
  return out;
}

// A child that writes sets A and B in turn until it is killed.
pid_t start_writer(const fs::path& dir) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (int i = 0;; ++i) {
      try {
        write_set(dir, i % 2 == 0 ? "B" : "A");
      } catch (...) {
        ::_exit(3);
      }
    }
  }
  return pid;
}

void kill_trials(int signo, int trials) {
  const fs::path dir = fresh_dir("kill" + std::to_string(signo));
  write_set(dir, "A");
  std::mt19937 rng(static_cast<unsigned>(signo));
  for (int t = 0; t < trials; ++t) {
    const pid_t child = start_writer(dir);
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 20000));
    ::kill(child, signo);
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "trial " << t << ": the writer did not end by signal " << signo;
    EXPECT_EQ(WTERMSIG(status), signo) << "trial " << t;
    const std::string tag = set_tag(dir);
    EXPECT_TRUE(tag == "A" || tag == "B") << "trial " << t;
    // SIGINT/SIGTERM clean up; only SIGKILL may leave a generation, which the next writer removes.
    if (signo != SIGKILL) {
      EXPECT_EQ(leftovers(dir), std::vector<std::string>{}) << "trial " << t;
    }
    if (::testing::Test::HasFailure()) break;
  }
  write_set(dir, "A");
  EXPECT_EQ(leftovers(dir), std::vector<std::string>{});
  fs::remove_all(dir);
}

TEST(FileSet, KilledWritersLeaveTheOldOrTheNewSet) {
  kill_trials(SIGKILL, 60);
  kill_trials(SIGINT, 60);
  kill_trials(SIGTERM, 60);
}

TEST(FileSet, ConcurrentWritersSerialise) {
  const fs::path dir = fresh_dir("concurrent");
  std::vector<pid_t> children;
  for (const char* tag : {"A", "B", "C"}) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      try {
        for (int i = 0; i < 20; ++i) write_set(dir, tag);
      } catch (...) {
        ::_exit(3);
      }
      ::_exit(0);
    }
    children.push_back(pid);
  }
  for (const pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  const std::string tag = set_tag(dir);
  EXPECT_TRUE(tag == "A" || tag == "B" || tag == "C");
  EXPECT_EQ(leftovers(dir), std::vector<std::string>{});
  fs::remove_all(dir);
}

// A writer that cannot get the lock in time says who holds it.
TEST(FileSet, ALockHeldTooLongIsReported) {
  const fs::path dir = fresh_dir("locked");
  write_set(dir, "A");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t holder = ::fork();
  if (holder == 0) {
    FileSetWriter w(dir);  // holds the lock
    (void)!::write(ready[1], "x", 1);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  // Waiting the full limit (30 s) is too long for a test: a forked waiter is stopped early and
  // only has to still be waiting; then the holder goes and a writer gets through.
  const pid_t waiter = ::fork();
  if (waiter == 0) {
    try {
      write_set(dir, "B");
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(0);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  int status = 0;
  EXPECT_EQ(::waitpid(waiter, &status, WNOHANG), 0) << "the second writer did not wait for the lock";
  ::kill(holder, SIGKILL);
  ::waitpid(holder, &status, 0);
  ::waitpid(waiter, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(set_tag(dir), "B");
  EXPECT_EQ(leftovers(dir), std::vector<std::string>{});
  ::close(ready[0]);
  ::close(ready[1]);
  fs::remove_all(dir);
}

// Runs `fn` in a child whose files may not exceed `limit` bytes (RLIMIT_FSIZE; SIGXFSZ ignored,
// so writes fail with EFBIG as they fail with ENOSPC on a full disk). Returns its exit status.
template <class Fn>
int with_file_size_limit(rlim_t limit, Fn fn) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit rl{limit, limit};
    ::setrlimit(RLIMIT_FSIZE, &rl);
    ::_exit(fn());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

TEST(FileSet, AFullDiskNamesTheFileAndLeavesNoOutputDirectory) {
  const fs::path root = fresh_dir("full");
  const fs::path out = root / "new" / "out";
  const int rc = with_file_size_limit(1000, [&] {
    try {
      write_set(out, "A");
    } catch (const Error& e) {
      const std::string msg = e.what();
      const bool named = msg.find((out / "horovod.yaml").string() + ": cannot write (File too large)") != std::string::npos;
      return named ? 0 : 4;
    }
    return 5;
  });
  EXPECT_EQ(rc, 0) << "4: the message does not name the file and the reason; 5: no error";
  EXPECT_FALSE(fs::exists(root / "new")) << "the output directories made for the failed write remain";
  // An existing set stays as it was.
  write_set(root, "A");
  EXPECT_EQ(with_file_size_limit(1000, [&] {
              try {
                write_set(root, "B");
              } catch (const Error&) {
                return 0;
              }
              return 5;
            }),
            0);
  EXPECT_EQ(set_tag(root), "A");
  EXPECT_EQ(leftovers(root), std::vector<std::string>{});
  fs::remove_all(root);
}

// A real full file system, where one can be mounted (root on Linux): a 64 KiB tmpfs.
TEST(FileSet, ENOSPCOnATinyTmpfs) {
  const fs::path mnt = fresh_dir("tmpfs");
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64k") != 0) GTEST_SKIP() << "cannot mount a tmpfs here";
  const fs::path out = mnt / "out";
  try {
    write_set(out, "A");  // 6 x 32 KiB do not fit in 64 KiB
    ADD_FAILURE() << "no error on a full file system";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(out));
  ::umount(mnt.c_str());
  fs::remove_all(mnt);
}

TEST(FileSet, PlainFilesAreTakenOverAndOtherFilesStay) {
  const fs::path dir = fresh_dir("adopt");
  for (const std::string& name : kNames) colltune::write_file_atomic(dir / name, content("A", name));
  colltune::write_file_atomic(dir / "notes.txt", "mine");
  fs::create_directories(dir / "runs");
  write_set(dir, "B");
  EXPECT_EQ(set_tag(dir), "B");
  EXPECT_EQ(read_file(dir / "notes.txt"), "mine");
  EXPECT_TRUE(fs::is_directory(dir / "runs"));
  for (const std::string& name : kNames) EXPECT_TRUE(fs::is_symlink(dir / name)) << name;
  fs::remove_all(dir);
}

TEST(FileSet, ForeignEntriesAtTheNamesAreRefusedBeforeAnyChange) {
  const fs::path dir = fresh_dir("foreign");
  write_set(dir, "A");
  fs::remove(dir / "report.html");
  fs::create_symlink("/etc/hostname", dir / "report.html");
  try {
    write_set(dir, "B");
    ADD_FAILURE() << "a foreign symbolic link was replaced";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("report.html: exists and is a symbolic link colltune did not make"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(fs::read_symlink(dir / "report.html"), "/etc/hostname");
  EXPECT_EQ(read_file(dir / "horovod.yaml"), content("A", "horovod.yaml"));
  fs::remove_all(dir);
}

TEST(FileSet, StaleTemporariesOfDeadProcessesAreRemoved) {
  const fs::path dir = fresh_dir("stale");
  write_set(dir, "A");
  // pid 2^22 + 1 is above Linux's pid_max: certainly not running.
  const std::string dead = ".horovod.yaml.tmp.4194305.0";
  const std::string alive = ".horovod.yaml.tmp." + std::to_string(::getpid()) + ".99";
  colltune::write_file_atomic(dir / "scratch", "x");
  fs::rename(dir / "scratch", dir / dead);
  colltune::write_file_atomic(dir / "scratch", "x");
  fs::rename(dir / "scratch", dir / alive);
  fs::create_directories(dir / ".colltune" / "gen.4194305.7");
  write_set(dir, "B");
  EXPECT_FALSE(fs::exists(dir / dead));
  EXPECT_TRUE(fs::exists(dir / alive));  // a live writer's temporary is not ours to remove
  EXPECT_FALSE(fs::exists(dir / ".colltune" / "gen.4194305.7"));
  fs::remove_all(dir);
}

}  // namespace

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"

namespace fs = std::filesystem;

namespace {
fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("colltune_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}
std::size_t files_in(const fs::path& d) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(d), fs::directory_iterator()));
}
}  // namespace

TEST(AtomicFile, WritesAndReadsBack) {
  const fs::path d = fresh_dir("write");
  colltune::write_file_atomic(d / "a.txt", "hello");
  EXPECT_EQ(colltune::read_file(d / "a.txt"), "hello");
  colltune::write_file_atomic(d / "a.txt", "again");
  EXPECT_EQ(colltune::read_file(d / "a.txt"), "again");
  EXPECT_EQ(files_in(d), 1u);
  fs::remove_all(d);
}

TEST(AtomicFile, FileSetLeavesNothingWithoutCommit) {
  const fs::path d = fresh_dir("set");
  {
    colltune::FileSetWriter w(d);
    w.stage("one", "1");
    w.stage("two", "2");
  }
  EXPECT_EQ(files_in(d), 0u);  // not even colltune's state directory
  {
    colltune::FileSetWriter w(d);
    w.stage("one", "1");
    w.stage("two", "2");
    EXPECT_EQ(w.commit().size(), 2u);
  }
  EXPECT_EQ(files_in(d), 3u);  // two links and colltune's state directory .colltune
  EXPECT_EQ(colltune::read_file(d / "two"), "2");
  fs::remove_all(d);
}

TEST(AtomicFile, FileSetCommitIsAllOrNothing) {
  const fs::path d = fresh_dir("rollback");
  colltune::write_file_atomic(d / "a", "old a");
  fs::create_directories(d / "b" / "occupied");  // a file cannot be renamed over a directory
  {
    colltune::FileSetWriter w(d);
    w.stage("a", "new a");
    EXPECT_THROW(w.stage("b", "new b"), colltune::Error);  // refused before the set changes
  }
  EXPECT_EQ(colltune::read_file(d / "a"), "old a");
  EXPECT_TRUE(fs::is_directory(d / "b"));
  EXPECT_EQ(files_in(d), 2u);  // "a" and the directory "b": no temporaries, no state directory
  fs::remove_all(d);
}

TEST(AtomicFile, Errors) {
  EXPECT_THROW(colltune::read_file("/nonexistent/colltune/file"), colltune::Error);
  EXPECT_THROW(colltune::write_file_atomic("/nonexistent/colltune/file", "x"), colltune::Error);
  EXPECT_THROW(colltune::FileSetWriter("/proc/colltune"), colltune::Error);  // cannot be created
}

// Input files are bounded: a device that never ends is refused at the limit, not read forever.
TEST(AtomicFile, ReadIsBounded) {
  try {
    colltune::read_file("/dev/zero");
    ADD_FAILURE() << "/dev/zero was read";
  } catch (const colltune::Error& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/zero: above the limit of 256 MiB"), std::string::npos) << e.what();
  }
}

// Temporaries of killed writers (SIGKILL cannot be caught) go with the next write of the file.
TEST(AtomicFile, DeadWritersTemporariesAreRemoved) {
  const fs::path d = fresh_dir("stale");
  colltune::write_file_atomic(d / "a.txt", "x");
  fs::copy_file(d / "a.txt", d / ".a.txt.tmp.4194305.3");  // above pid_max: a dead process
  colltune::write_file_atomic(d / "a.txt", "y");
  EXPECT_EQ(files_in(d), 1u);
  fs::remove_all(d);
}

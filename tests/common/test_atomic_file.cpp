#include <gtest/gtest.h>
#include <sys/stat.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

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

// Input files are bounded: a file above the limit is refused by its size, before it is read.
TEST(AtomicFile, ReadIsBounded) {
  const fs::path d = fresh_dir("bounded");
  {
    std::ofstream(d / "big.txt") << "x";
  }
  fs::resize_file(d / "big.txt", (std::size_t{256} << 20) + 1);  // sparse: no disk used
  try {
    colltune::read_file(d / "big.txt");
    ADD_FAILURE() << "a 256 MiB + 1 file was read";
  } catch (const colltune::Error& e) {
    EXPECT_NE(std::string(e.what()).find("big.txt: above the limit of 256 MiB"), std::string::npos) << e.what();
  }
  fs::remove_all(d);
}

// Only regular files are read: a device is never read (/dev/zero would never end) and a FIFO is
// refused at once, not waited on for a writer that never comes.
TEST(AtomicFile, ReadRefusesWhatIsNotARegularFile) {
  const fs::path d = fresh_dir("fifo");
  ASSERT_EQ(::mkfifo((d / "pipe").c_str(), 0600), 0);
  for (const fs::path& p : {fs::path("/dev/zero"), d / "pipe"}) {
    try {
      colltune::read_file(p);
      ADD_FAILURE() << p << " was read";
    } catch (const colltune::Error& e) {
      EXPECT_NE(std::string(e.what()).find(p.string() + ": not a regular file"), std::string::npos) << e.what();
    }
  }
  try {
    colltune::read_file(d);
    ADD_FAILURE() << "a directory was read";
  } catch (const colltune::Error& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory, expected a file"), std::string::npos) << e.what();
  }
  fs::remove_all(d);
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

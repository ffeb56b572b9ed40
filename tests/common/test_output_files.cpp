// A command's output files as one unit (common/output_files.hpp): every target checked when it
// is declared, all written or none.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/finite.hpp"
#include "colltune/common/output_files.hpp"
#include "common/expect_error.hpp"

namespace colltune {
namespace {

namespace fs = std::filesystem;
using test::expect_error;

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("colltune_output_files_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::size_t entries(const fs::path& d) {
  std::size_t n = 0;
  for (auto it = fs::recursive_directory_iterator(d); it != fs::recursive_directory_iterator(); ++it) ++n;
  return n;
}

TEST(OutputFiles, TargetsAreCheckedWhenDeclared) {
  const fs::path d = fresh_dir("checks");
  std::ofstream(d / "afile") << "x";
  ASSERT_EQ(::mkfifo((d / "fifo").c_str(), 0600), 0);
  OutputFiles files;
  expect_error([&] { files.file("--json", d / "afile" / "x.json"); }, "afile is not a folder");
  expect_error([&] { files.file("--json", d / "missing" / "x.json"); }, "cannot use folder");
  expect_error([&] { files.file("--html", d); }, "is a folder, expected a file");
  expect_error([&] { files.file("--trace", d / "fifo"); }, "is not a regular file");
  expect_error([&] { files.file("--json", "/dev/null"); }, "/dev/null: is not a regular file");
  files.file("-o", d / "good.json");
  expect_error([&] { files.file("--json", d / "." / "good.json"); }, "-o names the same file");
  expect_error([&] { files.directory("--out", d / "afile", {"a.txt"}); }, "is not a folder");
  fs::create_directories(d / "set" / "a.txt");
  expect_error([&] { files.directory("--out", d / "set", {"a.txt"}); }, "a.txt is a folder");
  fs::remove_all(d);
}

// None written when one cannot be: the good one stays as it was.
TEST(OutputFiles, AllOrNothing) {
  const fs::path d = fresh_dir("all");
  std::ofstream(d / "good.json") << "old";
  fs::create_directories(d / "sub");
  OutputFiles files;
  files.file("-o", d / "good.json");
  files.file("--html", d / "sub" / "page.html");
  files.stage(d / "good.json", "{\"new\": 1}\n");
  files.stage(d / "sub" / "page.html", "<p>ok</p>\n");
  fs::remove_all(d / "sub");  // the folder goes away after the check: the write fails
  expect_error([&] { files.commit(); }, "page.html: cannot write");
  EXPECT_EQ(read_file(d / "good.json"), "old");
  EXPECT_EQ(entries(d), 1u) << "no temporary left";
  fs::remove_all(d);
}

TEST(OutputFiles, FilesAndADirectorySetTogether) {
  const fs::path d = fresh_dir("set");
  OutputFiles files;
  files.file("--json", d / "summary.json");
  files.directory("--out", d / "out" / "deeper", {"a.txt", "b.txt"});
  files.stage(d / "summary.json", "{}\n");
  files.stage_in_directory("a.txt", "a\n");
  files.stage_in_directory("b.txt", "b\n");
  const auto written = files.commit();
  ASSERT_EQ(written.size(), 3u);
  EXPECT_EQ(read_file(d / "summary.json"), "{}\n");
  EXPECT_EQ(read_file(d / "out" / "deeper" / "b.txt"), "b\n");
  fs::remove_all(d);
}

// A text file with a non-finite number is a bug: nothing is written.
TEST(OutputFiles, NonFiniteTextIsABug) {
  const fs::path d = fresh_dir("finite");
  OutputFiles files;
  files.file("--html", d / "r.html");
  files.file("--json", d / "r.json");
  files.stage(d / "r.html", "<td>inf ms</td>\n");
  files.stage(d / "r.json", "{\"name\": \"inf\"}\n");  // JSON is checked as a document, by json_text
  EXPECT_THROW(files.commit(), finite::InternalError);
  EXPECT_EQ(entries(d), 0u);
  fs::remove_all(d);
}

}  // namespace
}  // namespace colltune

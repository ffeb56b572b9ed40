// A table the plugin cannot use: one warning through NCCL's logger naming the file, the line and
// the reason, init still succeeds, and every collective keeps NCCL's choice. Also the lenient
// side of the grammar (spaces, CRLF, comments, case, short rows) and where the table is found.
#include "plugin_fixture.hpp"

namespace colltune::nccl_plugin::test {
namespace {

using abi::kAllReduce;

// A valid row that would match allreduce of 100 bytes on the default 2-node, 16-rank job: a bad
// line after it must still keep it from applying.
const std::string kGoodRow = "allreduce,0,1000000,ring,simple,4,2,16,-1,-1\n";

class PluginErrors : public PluginTest {
 protected:
  // Inits on `csv`; expects exactly one warning containing every `parts`, and no change at all.
  void expect_refused(const std::string& csv, std::vector<std::string> parts) {
    void* ctx = load(csv);
    expect_one_warning(std::move(parts));
    expect_untouched(ask(ctx, kAllReduce, 100, 1, 0, {}, 12345), {}, 12345);
  }
  static void expect_one_warning(const std::vector<std::string>& parts) {
    const auto warnings = logged(abi::kLogWarn);
    ASSERT_EQ(warnings.size(), 1u) << "expected one warning";
    for (const auto& part : parts) EXPECT_NE(warnings[0].find(part), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("NCCL keeps its own choices"), std::string::npos) << warnings[0];
  }
};

TEST_P(PluginErrors, AMissingFileIsOneWarning) {
  const std::string path = (dir_.path() / "absent.conf").string();
  env_.set("NCCL_TUNER_CONFIG_FILE", path);
  void* ctx = init();
  expect_one_warning({path, "NCCL_TUNER_CONFIG_FILE", "cannot open (No such file or directory)"});
  expect_untouched(ask(ctx, kAllReduce, 100, 1, 0, {}, 12345), {}, 12345);
}

TEST_P(PluginErrors, ADirectoryIsUnreadable) {
  env_.set("NCCL_TUNER_CONFIG_FILE", dir_.path().string());
  void* ctx = init();
  expect_one_warning({dir_.path().string(), "cannot read (Is a directory)"});
  expect_untouched(ask_allreduce(ctx, 100));
}

TEST_P(PluginErrors, MalformedRowsNameTheirLineAndField) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"allreduce,0,1000,rings,simple,-1,2,16", "field 4 (algorithm) 'rings' is not one of tree, ring"},
      {"allreduce,0,1000,ring,fast,-1,2,16", "field 5 (protocol) 'fast' is not one of ll, ll128, simple, -1"},
      {"allreducex,0,1000,ring,simple,-1,2,16", "field 1 (collective_type) 'allreducex'"},
      {"-1,0,1000,ring,simple,-1,2,16", "field 1 (collective_type) '-1'"},
      {"allreduce,0,12k,ring,simple,-1,2,16", "field 3 (max_bytes) '12k' is not a byte count"},
      {"allreduce,0x10,100,ring,simple,-1,2,16", "field 2 (min_bytes) '0x10' is not a byte count"},
      {"allreduce,-5,100,ring,simple,-1,2,16", "field 2 (min_bytes) '-5' is not a byte count"},
      {"allreduce,+5,100,ring,simple,-1,2,16", "field 2 (min_bytes) '+5' is not a byte count"},
      {"allreduce,1 0,100,ring,simple,-1,2,16", "field 2 (min_bytes) '1 0' is not a byte count"},
      {"allreduce,,100,ring,simple,-1,2,16", "field 2 (min_bytes) '' is not a byte count"},
      {"allreduce,0,18446744073709551616,ring,simple,-1,2,16",
       "field 3 (max_bytes) '18446744073709551616' is larger than 2^64-1"},
      {"allreduce,500,100,ring,simple,-1,2,16", "field 3 (max_bytes) '100' is below min_bytes 500"},
      {"allreduce,0,100,ring,simple,0,2,16", "field 6 (channels) '0' must be -1 or 1..64 (NCCL's MAXCHANNELS)"},
      {"allreduce,0,100,ring,simple,-2,2,16", "field 6 (channels) '-2' must be -1 or 1..64 (NCCL's MAXCHANNELS)"},
      // NCCL copies the count into every task and loops over that many channel ids.
      {"allreduce,0,100,ring,simple,65,2,16", "field 6 (channels) '65' must be -1 or 1..64 (NCCL's MAXCHANNELS)"},
      {"allreduce,0,100,ring,simple,2147483647,2,16", "field 6 (channels) '2147483647' must be -1 or 1..64"},
      // A NUL byte is shown escaped, and the rest of the warning is not cut short.
      {std::string("allreduce,0,100,ri\0ng,simple,-1,2,16", 36), "field 4 (algorithm) 'ri\\x00ng' is not one of"},
      {"allreduce,0,100,ring\x1b[31m,simple,-1,2,16", "field 4 (algorithm) 'ring\\x1b[31m' is not one of"},
      {"allreduce,0,100,ring,simple,-1,2.5,16", "field 7 (nNodes) '2.5' is not an integer"},
      {"allreduce,0,100,ring,simple,-1,2,99999999999", "field 8 (nRanks) '99999999999' is out of range"},
      {"allreduce,0,100,ring,simple,-1,2,16,x", "field 9 (numPipeOps) 'x' is not an integer"},
      {"allreduce,0,100,ring,simple,-1,2,16,-1,2", "field 10 (regBuff) '2' must be -1, 0 or 1"},
      {"allreduce,0,100,-1,simple,4,2,16", "field 5 (protocol) 'simple' needs an algorithm"},
      {"allreduce,0,100,ring,simple,-1,2", "7 fields, expected 8 to 10"},
      {"allreduce,0,100,ring,simple,-1,2,16,-1,-1,7", "11 fields, expected 8 to 10"},
      {"allreduce,0,100,ring,simple,-1,2,16," + std::string(260, '1'), "longer than 256 characters"},
  };
  for (const auto& [line, reason] : cases) {
    SCOPED_TRACE(line);
    captured_log().clear();
    // The bad row is line 3, after a comment and a good row.
    expect_refused("# header\n" + kGoodRow + line + "\n", {"line 3: " + reason});
  }
}

// colltune writes an empty table whenever NCCL's own choice is predicted best: that is one line
// at INFO (it was a warning on every communicator init), and NCCL keeps its choices.
TEST_P(PluginErrors, AnEmptyTableIsOneInfoLine) {
  for (const char* csv : {"# only comments\n\n   \n", ""}) {
    captured_log().clear();
    void* ctx = load(csv);
    EXPECT_TRUE(logged(abi::kLogWarn).empty());
    const auto infos = logged(abi::kLogInfo);
    ASSERT_EQ(infos.size(), 1u);
    EXPECT_NE(infos[0].find("has no rows: colltune predicted NCCL's own choices best"), std::string::npos) << infos[0];
    expect_untouched(ask(ctx, kAllReduce, 100, 1, 0, {}, 12345), {}, 12345);
  }
}

TEST_P(PluginErrors, TheSizeLimitsAreNamed) {
  // One byte over 1 MiB, in comments: refused by size before parsing.
  std::string big = kGoodRow;
  while (big.size() <= (std::size_t{1} << 20)) big += "# " + std::string(100, 'x') + "\n";
  expect_refused(big, {"larger than 1 MiB"});
  // 4097 rows: refused at the first row over the limit.
  std::string many;
  for (int i = 0; i < 4097; ++i) many += kGoodRow;
  captured_log().clear();
  expect_refused(many, {"line 4097: more than 4096 rows"});
  // 4096 rows are fine.
  many.resize(many.size() - kGoodRow.size());
  captured_log().clear();
  void* ctx = load(many);
  EXPECT_TRUE(logged(abi::kLogWarn).empty());
  expect_chosen(ask_allreduce(ctx, 100), abi::kRing, abi::kSimple);
}

TEST_P(PluginErrors, ANullLoggerIsNeverCalled) {
  env_.set("NCCL_TUNER_CONFIG_FILE", (dir_.path() / "absent.conf").string());
  void* ctx = init(16, 2, nullptr);
  expect_untouched(ask_allreduce(ctx, 100));
  // A valid table: one init with the capture logger (its load line), one with none.
  load(kGoodRow);
  void* quiet = init(16, 2, nullptr);
  expect_chosen(ask_allreduce(quiet, 100), abi::kRing, abi::kSimple);
  EXPECT_EQ(captured_log().size(), 1u) << "only the capture-logger init logs";
}

TEST_P(PluginErrors, LenientWhereTheFormatAllowsIt) {
  // Spaces and tabs around fields, CRLF, inline comments, upper case, 8- and 9-field rows.
  void* ctx = load(
      "\r\n# comment\r\n"
      "  AllReduce , 0 ,\t4096, Ring , SIMPLE , -1 , 2 , 16  # small sizes\r\n"
      "\n"
      "allreduce,4097,8192,tree,ll,-1,2,16,1\r\n");
  EXPECT_TRUE(logged(abi::kLogWarn).empty());
  expect_chosen(ask_allreduce(ctx, 4096), abi::kRing, abi::kSimple);
  expect_chosen(ask_allreduce(ctx, 8192), abi::kTree, abi::kLL);
  const auto infos = logged(abi::kLogInfo);
  ASSERT_FALSE(infos.empty());
  EXPECT_NE(infos[0].find("loaded 2 rows"), std::string::npos) << infos[0];
}

TEST_P(PluginErrors, ColltuneTunerTableTakesPrecedence) {
  const std::string ring = dir_.write("ring.conf", "allreduce,0,1000,ring,simple,-1,-1,-1\n");
  const std::string tree = dir_.write("tree.conf", "allreduce,0,1000,tree,simple,-1,-1,-1\n");
  env_.set("NCCL_TUNER_CONFIG_FILE", ring);
  env_.set("COLLTUNE_TUNER_TABLE", tree);
  expect_chosen(ask_allreduce(init(), 100), abi::kTree, abi::kSimple);
  EXPECT_NE(logged(abi::kLogInfo).at(0).find("from COLLTUNE_TUNER_TABLE"), std::string::npos);
  // Empty counts as unset.
  env_.set("COLLTUNE_TUNER_TABLE", "");
  expect_chosen(ask_allreduce(init(), 100), abi::kRing, abi::kSimple);
}

TEST_P(PluginErrors, WithoutAVariableTheWorkingDirectorysTableIsRead) {
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir_.path());
  void* missing = init();  // no nccl_tuner.conf yet
  expect_one_warning({"nccl_tuner.conf", "neither COLLTUNE_TUNER_TABLE nor NCCL_TUNER_CONFIG_FILE is set"});
  dir_.write("nccl_tuner.conf", kGoodRow);
  void* found = init();
  std::filesystem::current_path(cwd);
  expect_untouched(ask_allreduce(missing, 100));
  expect_chosen(ask_allreduce(found, 100), abi::kRing, abi::kSimple);
}

INSTANTIATE_TEST_SUITE_P(EveryCostTableVersion, PluginErrors, ::testing::Values(3, 4, 5, 6), version_name);

}  // namespace
}  // namespace colltune::nccl_plugin::test

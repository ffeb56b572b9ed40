// The JSON workload format: round trip, ordering, and every kind of bad input.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "colltune/common/error.hpp"
#include "colltune/sim/profiles.hpp"
#include "colltune/sim/workload.hpp"

namespace colltune::sim {
namespace {

std::string doc(const std::string& tensors, const std::string& extra = "") {
  return R"({"version": 1, "name": "t", "forward_us": 100, "backward_us": 200, )" + extra +
         R"("tensors": [)" + tensors + "]}";
}

// The error message for `text`, or "" when it parses.
std::string error_of(const std::string& text) {
  try {
    parse_workload_json(text, "w.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void expect_error(const std::string& text, std::initializer_list<const char*> parts) {
  const std::string message = error_of(text);
  ASSERT_FALSE(message.empty()) << "accepted: " << text;
  EXPECT_NE(message.find("w.json"), std::string::npos) << message;
  for (const char* part : parts) EXPECT_NE(message.find(part), std::string::npos) << message << " lacks " << part;
}

TEST(WorkloadJson, RoundTripIsExact) {
  const Workload w = make_profile("resnet50");
  const Workload back = parse_workload_json(workload_to_json(w), "round-trip");
  EXPECT_EQ(back.name, w.name);
  EXPECT_EQ(back.forward_us, w.forward_us);
  EXPECT_EQ(back.backward_us, w.backward_us);
  ASSERT_EQ(back.tensors.size(), w.tensors.size());
  for (std::size_t i = 0; i < w.tensors.size(); ++i) {
    EXPECT_EQ(back.tensors[i].name, w.tensors[i].name);
    EXPECT_EQ(back.tensors[i].count, w.tensors[i].count);
    EXPECT_EQ(back.tensors[i].dtype, w.tensors[i].dtype);
    EXPECT_EQ(back.tensors[i].ready_us, w.tensors[i].ready_us);
  }
}

TEST(WorkloadJson, RoundTripKeepsDtypes) {
  Workload w{"mixed", 1, 10, {{"a", 3, coll::DType::f16, 0}, {"b", 5, coll::DType::bf16, 1}, {"c", 7, coll::DType::f64, 10}}};
  const Workload back = parse_workload_json(workload_to_json(w), "mixed");
  EXPECT_EQ(back.tensors[0].dtype, coll::DType::f16);
  EXPECT_EQ(back.tensors[1].dtype, coll::DType::bf16);
  EXPECT_EQ(back.tensors[2].dtype, coll::DType::f64);
  EXPECT_EQ(back.total_bytes(), 3 * 2 + 5 * 2 + 7 * 8u);
}

TEST(WorkloadJson, TensorsAreSortedByReadyTimeAndDtypeDefaultsToFp32) {
  const Workload w = parse_workload_json(
      doc(R"({"name": "late", "count": 4, "ready_us": 150}, {"name": "early", "count": 2, "ready_us": 10})"), "w");
  ASSERT_EQ(w.tensors.size(), 2u);
  EXPECT_EQ(w.tensors[0].name, "early");
  EXPECT_EQ(w.tensors[1].name, "late");
  EXPECT_EQ(w.tensors[0].dtype, coll::DType::f32);
}

TEST(WorkloadJson, BadInputsNameFieldAndValue) {
  expect_error(doc(R"({"name": "a", "count": -5, "ready_us": 1})"), {"tensors[0].count", "-5"});
  expect_error(doc(R"({"name": "a", "count": 1.5, "ready_us": 1})"), {"tensors[0].count", "1.5"});
  expect_error(doc(R"({"name": "a", "count": "8", "ready_us": 1})"), {"tensors[0].count"});
  expect_error(doc(R"({"name": "a", "count": 8, "ready_us": -1})"), {"tensors[0].ready_us", "-1"});
  expect_error(doc(R"({"name": "a", "count": 8, "ready_us": 250})"), {"ready_us", "250", "backward"});
  expect_error(doc(R"({"name": "a", "count": 8, "dtype": "fp8", "ready_us": 1})"), {"tensors[0].dtype", "fp8"});
  expect_error(doc(R"({"name": "a", "count": 8})"), {"tensors[0].ready_us", "missing"});
  expect_error(doc(R"({"count": 8, "ready_us": 1})"), {"tensors[0].name", "missing"});
  expect_error(doc(R"({"name": "a", "count": 8, "ready": 1})"), {"tensors[0].ready", "unknown field"});
  expect_error(doc(R"({"name": "a", "count": 9223372036854775807, "dtype": "fp64", "ready_us": 1})"),
               {"count", "overflow"});
  expect_error(doc(""), {"tensors", "empty"});
  expect_error(doc("1"), {"tensors[0]", "not an object"});
  expect_error(R"({"version": 1, "forward_us": -3, "backward_us": 1, "tensors": []})", {"forward_us", "-3"});
  expect_error(R"({"version": 1, "forward_us": 3, "backward_us": "x", "tensors": []})", {"backward_us"});
  expect_error(R"({"version": 2, "forward_us": 3, "backward_us": 1, "tensors": []})", {"version", "2"});
  expect_error(R"({"forward_us": 3, "backward_us": 1, "tensors": []})", {"version", "missing"});
  expect_error(R"({"format": "other", "version": 1})", {"format", "other"});
  expect_error(R"({"version": 1, "forward_us": 3, "backward_us": 5, "tensors": {}})", {"tensors", "not an array"});
  expect_error(R"({"version": 1, "forward_us": 3, "backward_us": 5, "tensorz": []})", {"tensorz", "unknown field"});
  expect_error(R"([1, 2])", {"top level"});
  expect_error(R"({"version": 1, "forward_us": 3, )", {"line 1, column 33: syntax error: unexpected end of input"});
  expect_error("", {"line 1, column 1: syntax error"});
  expect_error(R"({"version": 1, "forward_us": 1e400})", {"line 1, column 34: number 1e400 is out of range"});
  expect_error(R"({"version": 1} {})", {"unexpected text after the end of the JSON document"});
  expect_error(std::string(70, '[') + std::string(70, ']'), {"nesting deeper than 64 levels"});
}

TEST(WorkloadJson, ValidateRejectsOutOfOrderAndOverflowingWorkloads) {
  Workload w{"w", 1, 10, {{"a", 1, coll::DType::f32, 5}, {"b", 1, coll::DType::f32, 2}}};
  EXPECT_THROW(validate_workload(w, "w"), Error);
  Workload big{"big", 1, 10, {{"a", SIZE_MAX / 8, coll::DType::f32, 1}, {"b", SIZE_MAX / 8, coll::DType::f32, 2},
                              {"c", SIZE_MAX / 8, coll::DType::f32, 3}}};
  EXPECT_THROW(validate_workload(big, "big"), Error);
  Workload nan{"nan", 1, 10, {{"a", 1, coll::DType::f32, std::numeric_limits<double>::quiet_NaN()}}};
  EXPECT_THROW(validate_workload(nan, "nan"), Error);
}

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("colltune-step-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }
  std::filesystem::path dir_;
};

TEST_F(TempDir, LoadWorkloadAcceptsProfilesFilesAndTimelines) {
  const auto file = write("mine.json", doc(R"({"name": "a", "count": 4, "ready_us": 10})"));
  EXPECT_EQ(load_workload(file.string()).tensors.size(), 1u);
  EXPECT_EQ(load_workload("vgg16:batch=8").total_params(), 138'357'544u);
  EXPECT_EQ(load_workload(COLLTUNE_EXAMPLES "/workloads/example_workload.json").name, "small-cnn");
  EXPECT_EQ(load_workload(COLLTUNE_EXAMPLES "/workloads/horovod_timeline_small.json").tensors.size(), 6u);
}

TEST_F(TempDir, LoadErrorsNameTheFile) {
  const auto bad = write("bad.json", doc(R"({"name": "a", "count": -1, "ready_us": 10})"));
  try {
    load_workload(bad.string());
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(bad.string()), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_workload((dir_ / "missing.json").string()), Error);
  try {
    load_workload("not-a-model");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown model 'not-a-model'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace colltune::sim

// Horovod timeline import: the example timeline (two steps of a 3-layer MLP on 2 ranks),
// cut-short files, missing sizes and malformed input.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"
#include "colltune/sim/timeline.hpp"

namespace colltune::sim {
namespace {

const char* kExample = COLLTUNE_EXAMPLES "/workloads/horovod_timeline_small.json";

std::string example_text() { return read_file(kExample); }

TEST(Timeline, ImportsTensorsSizesAndReadyTimes) {
  const TimelineImport imp = import_horovod_timeline(kExample);
  const Workload& w = imp.workload;
  EXPECT_EQ(w.name, "horovod_timeline_small");
  ASSERT_EQ(w.tensors.size(), 6u);  // the parameter broadcasts are not allreduces
  const char* names[] = {"fc.bias", "fc.weight", "layer2.bias", "layer2.weight", "layer1.bias", "layer1.weight"};
  const std::size_t counts[] = {10, 5120, 512, 524288, 1024, 802816};
  const double ready[] = {0, 3, 700, 703, 2100, 2103};
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(w.tensors[i].name, std::string("DistributedOptimizer_Allreduce/") + names[i]);
    EXPECT_EQ(w.tensors[i].count, counts[i]) << names[i];
    EXPECT_EQ(w.tensors[i].dtype, coll::DType::f32);
    EXPECT_DOUBLE_EQ(w.tensors[i].ready_us, ready[i]) << names[i];
  }
  EXPECT_DOUBLE_EQ(w.backward_us, 2103);
  // Step period 9000 us; step 1's last allreduce ends 3273 us after the first readiness.
  EXPECT_DOUBLE_EQ(w.forward_us, 9000 - 3273);
  EXPECT_EQ(imp.steps_seen, 2u);
  EXPECT_EQ(imp.assumed_sizes, 0u);
  EXPECT_FALSE(imp.repaired);
  // The start-up broadcasts are left out, and said so.
  EXPECT_EQ(imp.left_out, (std::vector<std::string>{"broadcast/fc.bias (broadcast of float32)",
                                                    "broadcast/fc.weight (broadcast of float32)"}));
  ASSERT_EQ(imp.notes.size(), 1u);
  EXPECT_EQ(imp.notes[0].find("2 operation(s) left out"), 0u) << imp.notes[0];
}

// What hvd.broadcast_object sends (a uint8 tensor), an allgather and an allreduce of a uint8
// metric are not gradient allreduces: left out and listed, never an error (a uint8 broadcast
// used to stop step/compare/tune with "dtype 'uint8' is not one colltune simulates").
TEST(Timeline, OperationsOutsideTheGradientPathAreLeftOutAndListed) {
  std::string text = example_text();
  const std::string fc_bias_args = R"("pid": 1, "args": {"dtype": "float32", "shape": "[10]"})";
  ASSERT_NE(text.find(fc_bias_args), std::string::npos);
  text.replace(text.find(fc_bias_args), fc_bias_args.size(), R"("pid": 1, "args": {"dtype": "uint8", "shape": "[1024]"})");
  const std::string extra = R"(
    {"name": "process_name", "ph": "M", "pid": 90, "args": {"name": "allgather/ids"}},
    {"ph": "B", "name": "ALLGATHER", "ts": 1300, "pid": 90},
    {"ph": "E", "ts": 1310, "pid": 90, "args": {"dtype": "int64", "shape": "[8]"}},
    {"name": "process_name", "ph": "M", "pid": 91, "args": {"name": "metrics/acc"}},
    {"ph": "B", "name": "ALLREDUCE", "ts": 1400, "pid": 91},
    {"ph": "E", "ts": 1410, "pid": 91, "args": {"dtype": "uint8", "shape": "[1]"}},)";
  text.insert(text.find('[') + 1, extra);
  const TimelineImport imp = import_horovod_timeline_text(text, "u8.json");
  EXPECT_EQ(imp.workload.tensors.size(), 6u);  // the gradients, as without them
  EXPECT_EQ(imp.left_out, (std::vector<std::string>{"broadcast/fc.bias (broadcast of uint8)",
                                                    "broadcast/fc.weight (broadcast of float32)",
                                                    "allgather/ids (allgather of int64)",
                                                    "metrics/acc (allreduce of uint8)"}));
  ASSERT_EQ(imp.notes.size(), 1u);
  EXPECT_NE(imp.notes[0].find("metrics/acc (allreduce of uint8)"), std::string::npos) << imp.notes[0];
}

TEST(Timeline, OptionsOverrideComputeTimes) {
  TimelineImportOptions options;
  options.forward_us = 1000;
  options.backward_us = 5000;
  const Workload w = import_horovod_timeline(kExample, options).workload;
  EXPECT_DOUBLE_EQ(w.forward_us, 1000);
  EXPECT_DOUBLE_EQ(w.backward_us, 5000);
  options.backward_us = 100;  // earlier than the last gradient
  EXPECT_THROW(import_horovod_timeline(kExample, options), Error);
}

TEST(Timeline, CutShortFilesAreRepaired) {
  const std::string text = example_text();
  // Without the closing bracket (an older writer, or a job killed between events).
  const std::string open = text.substr(0, text.rfind(']'));
  const TimelineImport a = import_horovod_timeline_text(open, "open.json");
  EXPECT_TRUE(a.repaired);
  EXPECT_EQ(a.workload.tensors.size(), 6u);
  // Cut in the middle of the second step: step one is complete.
  const std::string half = text.substr(0, text.find("\"ts\": 260065") + 4);
  const TimelineImport b = import_horovod_timeline_text(half, "half.json");
  EXPECT_TRUE(b.repaired);
  ASSERT_EQ(b.workload.tensors.size(), 6u);
  EXPECT_EQ(b.workload.tensors[5].count, 802816u);
}

TEST(Timeline, MissingShapeAssumesMedianSize) {
  std::string text = example_text();
  // Remove every shape of fc.bias (pid 3): replace its op-closing args.
  const std::string args = R"(, "pid": 3, "args": {"dtype": "float32", "shape": "[10]"})";
  for (std::size_t pos; (pos = text.find(args)) != std::string::npos;) text.replace(pos, args.size(), R"(, "pid": 3)");
  const TimelineImport imp = import_horovod_timeline_text(text, "noshape.json");
  EXPECT_EQ(imp.assumed_sizes, 1u);
  ASSERT_FALSE(imp.notes.empty());
  // Median of the five known counts {512, 1024, 5120, 524288, 802816}.
  EXPECT_EQ(imp.workload.tensors[0].count, 5120u);
}

TEST(Timeline, TraceEventsObjectFormIsAccepted) {
  const std::string text = R"({"traceEvents": [
    {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "grad/a"}},
    {"ph": "B", "name": "NEGOTIATE_ALLREDUCE", "ts": 100, "pid": 1},
    {"ph": "E", "ts": 120, "pid": 1},
    {"ph": "B", "name": "ALLREDUCE", "ts": 130, "pid": 1},
    {"ph": "E", "ts": 190, "pid": 1, "args": {"dtype": "float16", "shape": "[2, 3]"}}]})";
  const Workload w = import_horovod_timeline_text(text, "obj.json").workload;
  ASSERT_EQ(w.tensors.size(), 1u);
  EXPECT_EQ(w.tensors[0].count, 6u);
  EXPECT_EQ(w.tensors[0].dtype, coll::DType::f16);
  EXPECT_DOUBLE_EQ(w.forward_us, 0);  // one step: unknown
}

std::string error_of(const std::string& text) {
  try {
    import_horovod_timeline_text(text, "t.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Timeline, BadInputsAreErrors) {
  const std::string one = R"([{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "g"}},
    {"ph": "B", "name": "NEGOTIATE_ALLREDUCE", "ts": 1, "pid": 1}, {"ph": "E", "ts": 2, "pid": 1},
    {"ph": "B", "name": "ALLREDUCE", "ts": 3, "pid": 1}, {"ph": "E", "ts": 4, "pid": 1, "args": SHAPE}])";
  auto with = [&](const std::string& args) {
    std::string t = one;
    t.replace(t.find("SHAPE"), 5, args);
    return t;
  };
  EXPECT_EQ(error_of(with(R"({"dtype": "float32", "shape": "[4]"})")), "");
  EXPECT_NE(error_of(with(R"({"dtype": "float32", "shape": "[a, b]"})")).find("[a, b]"), std::string::npos);
  EXPECT_NE(error_of(with(R"({"dtype": "float32", "shape": "[-4]"})")).find("negative"), std::string::npos);
  // Its one allreduce is not a gradient colltune models: nothing is left, and the message says why.
  EXPECT_EQ(error_of(with(R"({"dtype": "uint8", "shape": "[4]"})")),
            "t.json: events: no gradient allreduce (NEGOTIATE_ALLREDUCE or ALLREDUCE events in a dtype colltune "
            "simulates): nothing to import; 1 operation(s) left out (only gradient allreduces in float16/32/64, "
            "bfloat16, int32/64 are modelled): g (allreduce of uint8)");
  EXPECT_NE(error_of(with(R"({"dtype": "float32"})")).find("no allreduced tensor has a shape"), std::string::npos);
  EXPECT_NE(error_of(R"([{"ph": "B", "name": "NEGOTIATE_BROADCAST", "ts": 1, "pid": 1}])").find("nothing to import"),
            std::string::npos);
  EXPECT_NE(error_of("{ not json").find("t.json"), std::string::npos);
  EXPECT_NE(error_of(R"({"a": 1})").find("not a Chrome trace"), std::string::npos);
  EXPECT_NE(error_of(R"([{"ph": "B", "name": "ALLREDUCE", "pid": 1}])").find("ts"), std::string::npos);
  EXPECT_NE(error_of(R"([1, 2])").find("not an object"), std::string::npos);
  // Wrong types name the event and the field (not "type_error.302 type must be string").
  EXPECT_EQ(error_of(R"([{"ph":1,"pid":1}])"), "t.json: event 0: \"ph\": expected a string, got 1");
  EXPECT_EQ(error_of(R"([{"ph":"B","pid":1,"name":7,"ts":1}])"), "t.json: event 0: \"name\": expected a string, got 7");
  EXPECT_NE(error_of(R"([{"ph":"B","pid":1,"ts":1e400}])").find("t.json: line 1, column 29: number 1e400 is out of range"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(100000, '[') + std::string(100000, ']')).find("nesting deeper than 64 levels"),
            std::string::npos);
}

// Only a file that ends early is repaired: a complete document followed by garbage is refused.
TEST(Timeline, TrailingGarbageIsAnError) {
  const std::string text = example_text();
  EXPECT_NE(error_of(text + " garbage").find("unexpected text after the end of the JSON document"), std::string::npos);
  EXPECT_NE(error_of(text.substr(0, text.rfind(']')) + "}]").find("t.json: line"), std::string::npos);
}

}  // namespace
}  // namespace colltune::sim

// Fuzz entry points (see fuzz_targets.hpp): topology JSON, NCCL XML, workload JSON, Horovod
// timeline, preset spec, size and time strings.
//
// The finite-answer oracle: an input a reader accepts goes on to what a command computes from
// it (the topology's JSON and a ring allreduce priced on it; the workload's JSON and its step
// time; the measurements' times; the size or time), and every number there must be finite and
// in range. A reader that accepts an input which then yields inf, nan or a negative time throws
// finite::InternalError, which is not a colltune::Error: the replay reports it as a failure.
#include "fuzz_targets.hpp"

#include "fuzz_commands.hpp"

#include <cmath>
#include <string>

#include "colltune/common/error.hpp"
#include "colltune/common/finite.hpp"
#include "colltune/common/units.hpp"
#include "colltune/calibrate/measurements.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/sim/step_model.hpp"
#include "colltune/sim/timeline.hpp"
#include "colltune/sim/workload.hpp"
#include "colltune/topology/json_io.hpp"
#include "colltune/topology/nccl_xml.hpp"
#include "colltune/topology/presets.hpp"

namespace colltune::fuzz {

void expect_finite(double value, const std::string& what) {
  if (!std::isfinite(value) || value < 0)
    throw finite::InternalError("fuzz oracle: " + what + " = " + std::to_string(value) + " from an accepted input");
}

namespace {

// Machines up to this size are also priced (larger accepted presets are only built: pricing
// them per mutation would not keep the replay CI-sized).
constexpr int kPricedRanks = 4096;

// An accepted topology: its JSON (finite-checked as it is written) and a 1 MiB ring allreduce.
void topology_oracle(const topo::Topology& t) {
  t.validate();
  (void)topo::to_json(t);
  if (t.num_ranks() < 2 || t.num_ranks() > kPricedRanks) return;
  sim::CollectiveRequest request;
  request.bytes = std::size_t{1} << 20;
  expect_finite(sim::CostModel(t).time_us(request), "ring allreduce time_us");
}

// An accepted workload: its JSON and its step on a small flat machine.
void workload_oracle(const sim::Workload& w) {
  (void)sim::workload_to_json(w);
  static const topo::Topology machine = topo::make_preset("flat:ranks=4");
  const sim::StepResult r = sim::StepSimulator(machine).run(w, sim::StepConfig{});
  expect_finite(r.step_time_us, "step_time_us");
  expect_finite(r.compute_us, "compute_us");
  expect_finite(r.exposed_comm_us, "exposed_comm_us");
}

void measurements_oracle(const tuner::MeasurementSet& set) {
  for (const tuner::Measurement& m : set.rows) {
    expect_finite(m.time_us, m.source + " time_us");
    if (m.in_place_time_us) expect_finite(*m.in_place_time_us, m.source + " in_place_time_us");
  }
  expect_finite(set.fusion_copy_bytes, "fusion_copy_bytes");
  expect_finite(set.fusion_copy_us, "fusion_copy_us");
}

void topology_json(std::string_view input) { topology_oracle(topo::topology_from_json(input, "fuzz.json")); }
void nccl_xml(std::string_view input) { topology_oracle(topo::topology_from_nccl_xml(input, "fuzz.xml")); }
void workload_json(std::string_view input) { workload_oracle(sim::parse_workload_json(input, "fuzz.json")); }
void horovod_timeline(std::string_view input) {
  workload_oracle(sim::import_horovod_timeline_text(input, "fuzz.json").workload);
}
void nccl_tests_log(std::string_view input) {
  measurements_oracle(tuner::parse_nccl_tests_log(std::string(input), "fuzz.txt"));
}
void bench_json(std::string_view input) { measurements_oracle(tuner::parse_bench_json(std::string(input), "fuzz.json")); }
// A preset spec as --topology takes it, without the file lookup (the fuzzer must not read files).
void preset_spec(std::string_view input) {
  if (topo::is_preset_spec(input)) topology_oracle(topo::make_preset(input));
}
void size_string(std::string_view input) {
  expect_finite(static_cast<double>(parse_size(input, "--size")), "size");
  expect_finite(static_cast<double>(parse_size(input, "--size", BareNumber::refused)), "size");
}
void time_string(std::string_view input) { expect_finite(parse_time_us(input, "--time"), "time_us"); }

std::vector<Target> reader_targets() {
  return {
      {"topology_json", topology_json,
       {"{", "}", "[", "]", ",", ":", "\"", "\"devices\"", "\"links\"", "\"ranks\"", "\"hosts\"", "\"kind\"",
        "\"gpu\"", "\"nvlink\"", "\"bandwidth_gbps\"", "\"latency_us\"", "1e308", "-1", "0", "1e400", "null", "true"}},
      {"nccl_xml", nccl_xml,
       {"<", ">", "/>", "</", "<system version=\"1\">", "<cpu numaid=\"0\">", "<pci busid=\"0\">", "<gpu dev=\"0\" sm=\"90\">",
        "<nvlink target=\"x\" count=\"1\"/>", "<nic>", "<net name=\"x\" speed=\"400000\"/>", "\"", "<!--", "-->",
        "<![CDATA[", "]]>", "rank=\"99999999\"", "count=\"-1\""}},
      {"workload_json", workload_json,
       {"{", "}", "[", "]", ",", ":", "\"tensors\"", "\"count\"", "\"ready_us\"", "\"dtype\"", "\"fp16\"",
        "18446744073709551615", "-1", "1e400", "1e308", "null", "\"version\": 1"}},
      {"horovod_timeline", horovod_timeline,
       {"{", "}", "[", "]", ",", "\"ph\"", "\"B\"", "\"E\"", "\"M\"", "\"pid\"", "\"ts\"", "\"ALLREDUCE\"",
        "\"NEGOTIATE_ALLREDUCE\"", "\"shape\"", "\"[99999999999999999999]\"", "\"args\"", "1e400", "-1", "null"}},
      {"nccl_tests_log", nccl_tests_log,
       {"#", "\n", " ", "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "error",
        "float", "half", "sum", "-1", "N/A", "1e308", "0:", "all_gather_perf", "NCCL_ALGO=Ring", "#  Rank  3 Group  0 Pid 1 on h device  0"}},
      {"bench_json", bench_json,
       {"{", "}", "[", "]", ",", ":", "\"format\"", "\"colltune-bench\"", "\"rows\"", "\"nranks\"", "\"type\"",
        "\"size_bytes\"", "\"out_of_place\"", "\"time_us\"", "\"algorithm\"", "-1", "1e308"}},
      {"preset_spec", preset_spec,
       {":", ",", "=", "x", "nodes=", "gpus=", "nics=", "dims=", "ranks=", "bw=", "lat=", "per_host=", "oversub=",
        "9999999", "-1", "0", "1e308", "nan", "inf", "flat", "torus", "fat-tree", "dgx-h100"}},
      {"size_string", size_string, {"KiB", "MiB", "GiB", "TiB", "K", "M", "G", "T", "B", "e308", ".", "-", "9999999"}},
      {"time_string", time_string, {"us", "ms", "s", "ns", "e308", ".", "-", "inf", "nan", "9999999"}},
  };
}

}  // namespace

const std::vector<Target>& targets() {
  static const std::vector<Target> all = [] {
    std::vector<Target> t = reader_targets();
    add_command_targets(t);
    return t;
  }();
  return all;
}

const Target& find_target(std::string_view name) {
  for (const Target& t : targets())
    if (name == t.name) return t;
  throw Error("no fuzz target '" + std::string(name) + "'");
}

bool accepted(const Target& target, const std::uint8_t* data, std::size_t size) {
  try {
    target.entry(std::string_view(reinterpret_cast<const char*>(data), size));
    return true;
  } catch (const Error&) {
    return false;  // refused with a message: the expected end for bad input
  }
}

int run(const Target& target, const std::uint8_t* data, std::size_t size) {
  (void)accepted(target, data, size);
  return 0;
}

}  // namespace colltune::fuzz

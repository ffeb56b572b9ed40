// Fuzz entry points (see fuzz_targets.hpp): topology JSON, NCCL XML, workload JSON, Horovod
// timeline, preset spec, size and time strings.
#include "fuzz_targets.hpp"

#include <string>

#include "colltune/common/error.hpp"
#include "colltune/common/units.hpp"
#include "colltune/calibrate/measurements.hpp"
#include "colltune/sim/timeline.hpp"
#include "colltune/sim/workload.hpp"
#include "colltune/topology/json_io.hpp"
#include "colltune/topology/nccl_xml.hpp"
#include "colltune/topology/presets.hpp"

namespace colltune::fuzz {
namespace {

void topology_json(std::string_view input) { topo::topology_from_json(input, "fuzz.json").validate(); }
void nccl_xml(std::string_view input) { topo::topology_from_nccl_xml(input, "fuzz.xml").validate(); }
void workload_json(std::string_view input) { sim::parse_workload_json(input, "fuzz.json"); }
void horovod_timeline(std::string_view input) { sim::import_horovod_timeline_text(input, "fuzz.json"); }
void nccl_tests_log(std::string_view input) { tuner::parse_nccl_tests_log(std::string(input), "fuzz.txt"); }
void bench_json(std::string_view input) { tuner::parse_bench_json(std::string(input), "fuzz.json"); }
// A preset spec as --topology takes it, without the file lookup (the fuzzer must not read files).
void preset_spec(std::string_view input) {
  if (topo::is_preset_spec(input)) topo::make_preset(input).validate();
}
void size_string(std::string_view input) {
  parse_size(input, "--size");
  parse_size(input, "--size", BareNumber::refused);
}
void time_string(std::string_view input) { parse_time_us(input, "--time"); }

}  // namespace

const std::vector<Target>& targets() {
  static const std::vector<Target> all{
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
  return all;
}

const Target& find_target(std::string_view name) {
  for (const Target& t : targets())
    if (name == t.name) return t;
  throw Error("no fuzz target '" + std::string(name) + "'");
}

int run(const Target& target, const std::uint8_t* data, std::size_t size) {
  try {
    target.entry(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const Error&) {
    // Refused with a message: the expected end for bad input.
  }
  return 0;
}

}  // namespace colltune::fuzz

// simulate --algo nccl: the options turned into NCCL's model (version, CPU, NCCL_ALGO,
// NCCL_PROTO, CollNet), and one clear line when NCCL would run nothing under them.
#include "commands/simulate_nccl.hpp"

#include <string>
#include <vector>

#include "colltune/common/error.hpp"
#include "colltune/sim/priced_machine.hpp"

namespace colltune::cli {
namespace {

constexpr sim::NcclColl kAllreduce = sim::NcclColl::allreduce;

// Re-throws an Error of `parse` with the option's name in front.
template <typename Parse>
auto parsed(const std::string& option, Parse parse) {
  try {
    return parse();
  } catch (const Error& e) {
    throw Error(option + ": " + e.what());
  }
}

}  // namespace

sim::NcclOptions nccl_settings(const NcclSimulateOptions& options) {
  sim::NcclOptions m;
  m.algo_env = options.algo_env;
  m.proto_env = options.proto_env;
  for (const std::string& setting : options.channel_env)
    parsed("--nccl-env", [&] { sim::set_nccl_channel_setting(m.channel_env, setting); });
  return m;
}

namespace {

sim::NcclOptions model_options(const NcclSimulateOptions& o) {
  sim::NcclOptions m = nccl_settings(o);  // NCCL_ALGO, NCCL_PROTO, the channel settings
  if (!o.version.empty()) m.version = parsed("--nccl-version", [&] { return sim::NcclVersion::parse(o.version); });
  if (!o.cpu.empty()) m.cpu = parsed("--cpu", [&] { return sim::parse_nccl_cpu(o.cpu); });
  m.nranks = o.ranks;
  m.collnet = o.collnet;
  m.compute_capability = o.compute_capability;
  return m;
}

// NCCL's model needs every GPU's compute capability; presets such as flat and torus give none.
void check_compute_capability(const topo::Topology& topology, const NcclSimulateOptions& o) {
  constexpr int kLowest = 60, kHighest = 120;  // Pascal to Blackwell, the rows of NCCL's tables
  if (o.compute_capability != 0 && (o.compute_capability < kLowest || o.compute_capability > kHighest))
    throw Error("--compute-capability " + std::to_string(o.compute_capability) + ": expected " +
                std::to_string(kLowest) + ".." + std::to_string(kHighest) + " (80 for A100, 90 for H100, 100 for B200)");
  if (o.compute_capability != 0 || topology.num_ranks() == 0) return;
  const topo::Device& gpu = topology.device(topology.device_of_rank(0));
  if (gpu.compute_capability == 0)
    throw Error("--algo nccl: " + topology.name + " gives no compute capability for its GPUs (rank 0: '" + gpu.id +
                "'); give --compute-capability, e.g. 90 for H100");
}

// --protocol P runs NCCL as NCCL_PROTO=P does. Together with --nccl-proto, P must be one the
// list leaves on for allreduce: NCCL_PROTO cannot be narrowed to a protocol it excludes.
sim::NcclOptions with_protocol(const topo::Topology& topology, sim::NcclOptions m, const std::string& protocol) {
  if (protocol.empty()) return m;
  const sim::NcclProto p = parsed("--protocol", [&] { return sim::parse_nccl_proto(protocol); });
  if (!m.proto_env.empty() && !sim::NcclModel(topology, m).env_allows(kAllreduce, p))
    throw Error("--protocol " + protocol + ": --nccl-proto '" + m.proto_env + "' (NCCL_PROTO) excludes " +
                std::string(sim::nccl_env_name(p)) + " for allreduce");
  m.proto_env = sim::nccl_env_name(p);
  return m;
}

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

// Whether any cell of the allreduce table is on (availability does not depend on the size).
bool anything_runs(const sim::NcclModel& m) {
  for (sim::NcclAlgo a : sim::kNcclAlgos)
    for (sim::NcclProto p : sim::kNcclProtos)
      if (m.bandwidth(kAllreduce, a, p) > 0 && !m.unavailable(kAllreduce, a)) return true;
  return false;
}

// The protocols NCCL runs `algo` with when NCCL_PROTO is unset, "LL128, Simple".
std::string protocols_of(const sim::NcclModel& unset, sim::NcclAlgo algo) {
  std::vector<std::string> names;
  for (sim::NcclProto p : sim::kNcclProtos)
    if (unset.bandwidth(kAllreduce, algo, p) > 0) names.emplace_back(sim::nccl_env_name(p));
  return names.empty() ? "no protocol" : join(names, ", ");
}

// NCCL would run nothing (its "no algorithm/protocol available" error): say which setting
// leaves nothing and why.
[[noreturn]] void explain_nothing_runs(const topo::Topology& topology, const NcclSimulateOptions& o,
                                       const sim::NcclOptions& used, const sim::NcclModel& m) {
  std::vector<sim::NcclAlgo> allowed;
  for (sim::NcclAlgo a : sim::kNcclAlgos)
    if (m.env_allows(kAllreduce, a)) allowed.push_back(a);
  if (allowed.empty()) throw Error("--nccl-algo '" + o.algo_env + "' (NCCL_ALGO) leaves no algorithm for allreduce");
  bool any_proto = false;
  for (sim::NcclProto p : sim::kNcclProtos) any_proto = any_proto || m.env_allows(kAllreduce, p);
  if (!any_proto) throw Error("--nccl-proto '" + o.proto_env + "' (NCCL_PROTO) leaves no protocol for allreduce");
  std::vector<std::string> why_not, runs;
  sim::NcclOptions unset = used;
  unset.proto_env.clear();
  const sim::NcclModel without_proto(topology, unset);
  for (sim::NcclAlgo a : allowed) {
    const std::string name(sim::nccl_env_name(a));
    if (auto why = m.unavailable(kAllreduce, a)) why_not.push_back(name + ": " + *why);
    else runs.push_back(name + " with " + protocols_of(without_proto, a) + " only");
  }
  const std::string where = " on " + topology.name;
  if (runs.empty())
    throw Error("--nccl-algo " + o.algo_env + ": not applicable" + where + " (" + join(why_not, "; ") + ")");
  const std::string option = !o.protocol.empty() ? "--protocol " + o.protocol : "--nccl-proto '" + o.proto_env + "'";
  throw Error(option + ": NCCL runs " + join(runs, ", ") + where);
}

sim::NcclOptions checked_options(const topo::Topology& topology, const NcclSimulateOptions& options) {
  check_compute_capability(topology, options);
  return with_protocol(topology, model_options(options), options.protocol);
}

}  // namespace

NcclPredictor::NcclPredictor(const topo::Topology& topology, const NcclSimulateOptions& options)
    : pricer_(sim::make_nccl_pricer(topology, checked_options(topology, options))) {
  if (!anything_runs(model())) explain_nothing_runs(topology, options, model().options(), model());
}

void add_nccl_setting_options(CLI::App& command, NcclSimulateOptions& options) {
  command.add_option("--nccl-algo", options.algo_env,
                     "NCCL_ALGO your jobs run with (NCCL's pick is made under it), e.g. Ring, ^NVLS");
  command.add_option("--nccl-proto", options.proto_env, "NCCL_PROTO your jobs run with, e.g. ^LL128");
  command.add_option("--nccl-env", options.channel_env,
                     "NCCL's channel settings your jobs run with, NAME=COUNT (NCCL_MIN_NCHANNELS, "
                     "NCCL_MAX_NCHANNELS, NCCL_MIN_CTAS, NCCL_MAX_CTAS); repeatable");
}

bool has_nccl_settings(const NcclSimulateOptions& o) {
  return !o.algo_env.empty() || !o.proto_env.empty() || !o.channel_env.empty();
}

std::pair<std::string, std::string> first_nccl_setting(const NcclSimulateOptions& o) {
  if (!o.algo_env.empty()) return {"--nccl-algo", o.algo_env};
  if (!o.proto_env.empty()) return {"--nccl-proto", o.proto_env};
  return {"--nccl-env", o.channel_env.empty() ? "" : o.channel_env.front()};
}

sim::NcclOptions nccl_settings(const topo::Topology& topology, const NcclSimulateOptions& options) {
  if (!has_nccl_settings(options)) return {};
  if (topology.num_ranks() > 0 && topology.device(topology.device_of_rank(0)).compute_capability == 0)
    throw Error(first_nccl_setting(options).first + ": NCCL's model does not describe " + topology.name +
                " (its GPUs give no compute capability), so NCCL's settings have nothing to apply to");
  const NcclPredictor checked(topology, options);  // the names, and that NCCL still runs something
  return checked.model().options();
}

std::string describe(const sim::NcclModel& model) {
  const sim::NcclOptions& o = model.options();
  std::string text = "NCCL " + model.constants().version.to_string() + "'s own choice per size";
  if (!o.algo_env.empty()) text += ", NCCL_ALGO=" + o.algo_env;
  if (!o.proto_env.empty()) text += ", NCCL_PROTO=" + o.proto_env;
  if (o.collnet) text += ", NCCL_COLLNET_ENABLE=1";
  if (!o.channel_env.empty()) text += ", " + sim::to_string(o.channel_env);
  return text + ", CPU " + std::string(topo::to_string(model.system().cpu));
}

}  // namespace colltune::cli

#pragma once
// simulate --algo nccl: what NCCL itself would run for an allreduce of each size (algorithm,
// protocol, channel count, by NCCL's own model) and what that costs on the machine (colltune's
// schedule of it with the protocol's costs: sim::NcclPricer, docs/nccl-model.md).
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "colltune/sim/nccl_model.hpp"
#include "colltune/sim/nccl_price.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::cli {

// The options of `simulate` that reach NCCL's model; empty strings are options not given.
struct NcclSimulateOptions {
  std::string version;    // --nccl-version 2.21|2.28|2.30 (default: the installed release)
  std::string algo_env;   // --nccl-algo, NCCL_ALGO's grammar
  std::string proto_env;  // --nccl-proto, NCCL_PROTO's grammar
  std::string protocol;   // --protocol LL|LL128|Simple: this protocol only
  std::string cpu;        // --cpu (sim::NcclCpu); default: the topology's, else intel_srp
  bool collnet = false;   // --nccl-collnet: NCCL_COLLNET_ENABLE=1
  int compute_capability = 0;  // --compute-capability, for GPUs the topology gives none (flat, torus)
  int ranks = 0;          // --ranks, 0 = every rank of the topology
  std::vector<std::string> channel_env;  // --nccl-env NAME=COUNT: NCCL's channel settings
};

class NcclPredictor {
 public:
  // Throws colltune::Error, one line naming the option, for an unknown release, CPU, algorithm
  // or protocol name, a protocol NCCL_PROTO excludes, and settings under which NCCL would run
  // nothing (an algorithm forced where it is not applicable, with the reason).
  NcclPredictor(const topo::Topology& topology, const NcclSimulateOptions& options);

  sim::NcclPrice predict(sim::NcclColl coll, std::size_t bytes) const { return pricer_->price(coll, bytes); }
  int ranks() const { return pricer_->nranks(); }
  const sim::NcclModel& model() const { return pricer_->model(); }

 private:
  std::unique_ptr<sim::NcclPricer> pricer_;
};

// "NCCL 2.28's choice, NCCL_ALGO=..., NCCL_PROTO=..." for the table's header.
std::string describe(const sim::NcclModel& model);

// The user's NCCL settings where step, tune and sweep price NCCL's pick: --nccl-algo,
// --nccl-proto, --nccl-env (NCCL_ALGO, NCCL_PROTO, the channel counts), as simulate takes them.
void add_nccl_setting_options(CLI::App& command, NcclSimulateOptions& options);
// Whether any of them was given.
bool has_nccl_settings(const NcclSimulateOptions& options);
// The first one given, for an error line: {"--nccl-algo", "Ring"}.
std::pair<std::string, std::string> first_nccl_setting(const NcclSimulateOptions& options);
// The settings as NCCL's model takes them, checked on `topology` as simulate checks them (one
// error line: an unknown name, a setting under which NCCL would run nothing); none given: {}.
sim::NcclOptions nccl_settings(const topo::Topology& topology, const NcclSimulateOptions& options);
// The same, for commands of several machines (sweep): the channel settings checked here, the
// NCCL_ALGO and NCCL_PROTO grammar on the first machine priced.
sim::NcclOptions nccl_settings(const NcclSimulateOptions& options);

}  // namespace colltune::cli

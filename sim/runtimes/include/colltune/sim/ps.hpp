#pragma once
// The parameter-server baseline's exchange (docs/parameter-server.md): one fusion buffer pushed
// by every worker to S servers, sharded, summed there and pulled back, as the registry's `ps`
// schedule priced by the event simulator on the machine the servers make with the workers:
// dedicated servers are extra hosts on the workers' network (topo::with_server_hosts), so the
// servers' NICs are shared resources and their contention is simulated, not averaged.
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>

#include "colltune/collectives/registry.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim {

struct PsOptions {
  int servers = 1;         // S >= 1
  bool colocated = false;  // server s on host s (S <= hosts) instead of a host of its own
  double agg_gbps = 0;     // servers' aggregation rate, GB/s of input; 0 = the workers' devices' rate
  bool operator==(const PsOptions&) const = default;
};

// "servers=4,colocated,agg_gbps=20" (the text after "ps:"). Throws colltune::Error naming the
// option: a missing or non-positive server count, an unknown option, a malformed value.
PsOptions parse_ps_options(std::string_view text);
// The canonical spelling parse_ps_options reads back: "servers=4,colocated,agg_gbps=20".
std::string to_string(const PsOptions& options);

class PsExchange {
 public:
  // `workers`: the machine whose every rank is a worker. Throws colltune::Error when S is out of
  // range (colocated with S > hosts) or dedicated servers have no network to join.
  PsExchange(const topo::Topology& workers, const PsOptions& options);

  const PsOptions& options() const { return options_; }
  // Workers and servers: the machine the schedule runs on.
  const topo::Topology& topology() const { return topology_; }
  int workers() const { return workers_; }
  // The ps schedule's options on topology()'s ranks.
  coll::AlgoOptions algo_options() const;
  // The aggregation rate the servers reduce at (GB/s; 0 = no cost).
  double agg_gbps() const { return agg_gbps_; }
  // Event-simulated time (us) of one buffer of `bytes` (elements of elem_size): push, sum, pull,
  // each shard cut into chunks of chunk_elems (0: one chunk) so that a chunk's pull overlaps the
  // next one's push (BytePS's partitions). Remembered per input; safe from several threads.
  double time_us(std::size_t bytes, std::size_t elem_size, std::size_t chunk_elems = 0) const;

 private:
  PsOptions options_;
  int workers_ = 0;
  double agg_gbps_ = 0;
  topo::Topology topology_;
  mutable std::mutex mutex_;
  mutable std::map<std::tuple<std::size_t, std::size_t, std::size_t>, double> times_;
};

}  // namespace colltune::sim

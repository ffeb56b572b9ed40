// The parameter-server exchange priced by the event simulator (model in ps.hpp).
#include "colltune/sim/ps.hpp"

#include <charconv>
#include <cmath>
#include <limits>

#include "colltune/collectives/step_source.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/parse.hpp"
#include "colltune/sim/event_sim.hpp"

namespace colltune::sim {
namespace {

// The workers' devices' reduction rate (the slowest that states one), as the cost model's gamma.
double workers_reduce_gbps(const topo::Topology& t) {
  double slowest = std::numeric_limits<double>::infinity();
  for (int r = 0; r < t.num_ranks(); ++r) {
    const double g = t.reduce_gbps_of(t.device_of_rank(r));
    if (g > 0) slowest = std::min(slowest, g);
  }
  return std::isfinite(slowest) ? slowest : 0;
}

}  // namespace

PsOptions parse_ps_options(std::string_view text) {
  const std::string what = "--runtime ps";
  PsOptions o;
  bool servers = false;
  for (const parse::SpecItem& item : parse::split_items(text, what, parse::Flags::allowed)) {
    if (item.key == "servers" && !item.flag) {
      o.servers = parse::integer<int>(item.value, what + ": servers", 1, 4096);
      servers = true;
    } else if (item.key == "agg_gbps" && !item.flag) {
      o.agg_gbps = parse::rate_gbps(item.value, what + ": agg_gbps");
    } else if (item.key == "colocated" && item.flag) {
      o.colocated = true;
    } else {
      parse::refuse(what, item.flag ? item.key : item.key + "=" + item.value,
                    "is unknown (valid: servers=S, colocated, agg_gbps=X)");
    }
  }
  if (!servers) throw Error("--runtime ps: needs servers=S (e.g. ps:servers=4)");
  return o;
}

std::string to_string(const PsOptions& o) {
  std::string s = "servers=" + std::to_string(o.servers);
  if (o.colocated) s += ",colocated";
  if (o.agg_gbps > 0) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, o.agg_gbps);
    s += ",agg_gbps=" + std::string(buf, ec == std::errc() ? end : buf);
  }
  return s;
}

PsExchange::PsExchange(const topo::Topology& workers, const PsOptions& options)
    : options_(options), workers_(workers.num_ranks()) {
  if (options.servers < 1)
    throw Error("--runtime ps: needs at least 1 server (got " + std::to_string(options.servers) + ")");
  agg_gbps_ = options.agg_gbps > 0 ? options.agg_gbps : workers_reduce_gbps(workers);
  if (!options.colocated) {
    topology_ = topo::with_server_hosts(workers, options.servers, agg_gbps_);
    return;
  }
  if (options.servers > workers.num_hosts()) {
    throw Error("--runtime ps: colocated servers live one per host: servers=" + std::to_string(options.servers) +
                " needs " + std::to_string(options.servers) + " hosts, topology '" + workers.name + "' has " +
                std::to_string(workers.num_hosts()));
  }
  topology_ = workers;
  // The server of host s reduces at the aggregation rate (its rank's device: a worker's GPU,
  // which in a ps schedule reduces only as a server).
  if (options.agg_gbps > 0) {
    const RankLayout layout = workers.rank_layout();
    for (int s = 0; s < options.servers; ++s)
      topology_.set_reduce_gbps(workers.device_of_rank(layout.ranks_on_host(s).front()), options.agg_gbps);
  }
}

coll::AlgoOptions PsExchange::algo_options() const {
  coll::AlgoOptions o;
  o.ps_servers = options_.servers;
  o.ps_colocated = options_.colocated;
  return o;
}

double PsExchange::time_us(std::size_t bytes, std::size_t elem_size, std::size_t chunk_elems) const {
  const std::tuple<std::size_t, std::size_t, std::size_t> key{bytes, elem_size, chunk_elems};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = times_.find(key); it != times_.end()) return it->second;
  }
  if (elem_size == 0 || bytes % elem_size != 0) {
    throw Error("ps: " + std::to_string(bytes) + " bytes are not whole elements of " + std::to_string(elem_size));
  }
  coll::AlgoOptions algo = algo_options();
  algo.chunk_elems = chunk_elems;
  coll::Schedule schedule = coll::build_schedule("ps", topology_.rank_layout(), bytes / elem_size, algo);
  EventSimOptions options;
  options.elem_size = elem_size;
  const double t = simulate_schedule(coll::StoredSteps(std::move(schedule)), topology_, options).time_us;
  std::lock_guard<std::mutex> lock(mutex_);
  times_.emplace(key, t);
  return t;
}

}  // namespace colltune::sim

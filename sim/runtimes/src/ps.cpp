// The parameter-server exchange priced by the event simulator (model in ps.hpp).
#include "colltune/sim/ps.hpp"

#include <charconv>
#include <cmath>
#include <limits>

#include "colltune/collectives/step_source.hpp"
#include "colltune/common/error.hpp"
#include "colltune/sim/event_sim.hpp"

namespace colltune::sim {
namespace {

[[noreturn]] void bad(std::string_view option, const std::string& why) {
  throw Error("--runtime ps: option '" + std::string(option) + "': " + why);
}

int parse_servers(std::string_view option, std::string_view value) {
  int s = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), s);
  if (ec != std::errc() || end != value.data() + value.size()) bad(option, "not a whole number of servers");
  if (s < 1) bad(option, "needs at least 1 server");
  if (s > 4096) bad(option, "at most 4096 servers");
  return s;
}

double parse_gbps(std::string_view option, std::string_view value) {
  double g = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), g);
  if (ec != std::errc() || end != value.data() + value.size()) bad(option, "not a number of GB/s");
  if (!std::isfinite(g) || g <= 0) bad(option, "needs a positive rate in GB/s");
  return g;
}

// The workers' devices' reduction rate (the slowest that states one), as the cost model's gamma.
double workers_reduce_gbps(const topo::Topology& t) {
  double slowest = std::numeric_limits<double>::infinity();
  for (int r = 0; r < t.num_ranks(); ++r) {
    const double g = t.device(t.device_of_rank(r)).reduce_gbps;
    if (g > 0) slowest = std::min(slowest, g);
  }
  return std::isfinite(slowest) ? slowest : 0;
}

}  // namespace

PsOptions parse_ps_options(std::string_view text) {
  PsOptions o;
  bool servers = false;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    const std::size_t eq = item.find('=');
    const std::string_view key = item.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? std::string_view{} : item.substr(eq + 1);
    if (key == "servers" && eq != std::string_view::npos) {
      o.servers = parse_servers(item, value);
      servers = true;
    } else if (key == "agg_gbps" && eq != std::string_view::npos) {
      o.agg_gbps = parse_gbps(item, value);
    } else if (item == "colocated") {
      o.colocated = true;
    } else {
      bad(item, "unknown (valid: servers=S, colocated, agg_gbps=X)");
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

// Uneven data under hvd.join (uneven.hpp): joined ranks send zeros, the others pay full price.
#include "colltune/sim/uneven.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <string>

#include "colltune/common/error.hpp"
#include "colltune/common/parse.hpp"
#include "colltune/topology/subset.hpp"

namespace colltune::sim {
namespace {

// A whole number >= 0 written in decimal, below 10^15 (beyond any run's batches); -1 when `text`
// is not one.
long count_or_negative(const std::string& text) {
  const std::optional<long> v = parse::try_integer<long>(text);
  return v && *v >= 0 && *v < 1000000000000000L ? *v : -1;
}

// The epoch's time: steps grouped into runs with the same set of computing ranks (the counts
// sorted), each run priced once at its slowest computing rank's factor.
double epoch_us(const StepSimulator& simulator, const Workload& workload, const StepConfig& config, Engine engine,
                const std::vector<long>& batches, const std::vector<double>& factor) {
  std::vector<std::size_t> order(batches.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return batches[a] > batches[b]; });
  std::map<double, double> step_us;  // factor -> step time
  const auto step_at = [&](double f) {
    auto it = step_us.find(f);
    if (it == step_us.end())
      it = step_us.emplace(f, simulator.run(with_compute_scaled(workload, f), config, engine).step_time_us).first;
    return it->second;
  };
  double total = 0, slowest = 0;
  for (std::size_t i = 0; i < order.size();) {
    const long count = batches[order[i]];
    for (; i < order.size() && batches[order[i]] == count; ++i) slowest = std::max(slowest, factor[order[i]]);
    const long below = i < order.size() ? batches[order[i]] : 0;  // the next smaller count
    if (count > below) total += static_cast<double>(count - below) * step_at(slowest);
  }
  return total;
}

}  // namespace

void apply_uneven(const std::string& text, const topo::Topology& topology, std::vector<long>& batches) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0)
    throw Error("--uneven " + text + ": expected WHO:N, WHO a rank or a host (e.g. 3:900, node1:800)");
  const std::string who = text.substr(0, colon);
  const long n = count_or_negative(text.substr(colon + 1));
  if (n < 0) throw Error("--uneven " + text + ": the batch count must be a whole number >= 0");
  const std::vector<int> ranks = topo::ranks_named(topology, who, topology.num_ranks(), "--uneven " + text);
  if (ranks.empty()) throw Error("--uneven " + text + ": the topology has no rank or host '" + who + "'");
  for (int r : ranks) batches[static_cast<std::size_t>(r)] = n;
}

std::vector<long> spread_batches(long batches, const std::string& spread, int nranks, std::uint64_t seed) {
  const bool percent = !spread.empty() && spread.back() == '%';
  const long value = count_or_negative(percent ? spread.substr(0, spread.size() - 1) : spread);
  if (value < 0)
    throw Error("--uneven-spread " + spread + ": expected a whole number of batches or a percentage (e.g. 50 or 5%)");
  const long width = percent ? batches * value / 100 : value;
  if (width > batches)
    throw Error("--uneven-spread " + spread + ": +-" + std::to_string(width) + " batches around " +
                std::to_string(batches) + " could make a count negative");
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<long> draw(-width, width);
  std::vector<long> out(static_cast<std::size_t>(nranks));
  for (long& b : out) b = batches + draw(rng);
  return out;
}

std::vector<long> even_split(long total, int nranks) {
  std::vector<long> out(static_cast<std::size_t>(nranks), total / nranks);
  for (long r = 0; r < total % nranks; ++r) ++out[static_cast<std::size_t>(r)];
  return out;
}

UnevenResult simulate_uneven(const StepSimulator& simulator, const Workload& workload, const StepConfig& config,
                             Engine engine, const std::vector<long>& batches, const std::vector<double>& rank_factor) {
  const auto n = static_cast<std::size_t>(simulator.nranks());
  if (batches.size() != n)
    throw Error("uneven data: " + std::to_string(batches.size()) + " batch counts for " + std::to_string(n) + " ranks");
  const std::vector<double> factor = rank_factor.empty() ? std::vector<double>(n, 1.0) : rank_factor;
  if (factor.size() != n)
    throw Error("uneven data: " + std::to_string(factor.size()) + " rank factors for " + std::to_string(n) + " ranks");
  for (std::size_t r = 0; r < n; ++r)
    if (batches[r] < 0) throw Error("uneven data: rank " + std::to_string(r) + " has a negative batch count");
  UnevenResult out;
  out.batches = batches;
  out.total_batches = std::accumulate(batches.begin(), batches.end(), 0L);
  out.steps = *std::max_element(batches.begin(), batches.end());
  const std::vector<long> even = even_split(out.total_batches, static_cast<int>(n));
  out.even_steps = even.front();
  out.epoch_us = epoch_us(simulator, workload, config, engine, batches, factor);
  out.even_epoch_us = epoch_us(simulator, workload, config, engine, even, factor);
  out.loss_us = out.epoch_us - out.even_epoch_us;
  for (long b : batches) out.idle_rank_steps += out.steps - b;
  const double slots = static_cast<double>(out.steps) * static_cast<double>(n);
  out.idle_fraction = slots > 0 ? static_cast<double>(out.idle_rank_steps) / slots : 0;
  return out;
}

}  // namespace colltune::sim

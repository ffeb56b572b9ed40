// Bench configuration checks and the size sweep.
#include <unistd.h>

#include <cstdint>
#include <limits>
#include <string>

#include "colltune/bench/bench.hpp"
#include "colltune/collectives/registry.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/limits.hpp"
#include "colltune/common/units.hpp"

namespace colltune::bench {

std::string_view to_string(Transport t) {
  switch (t) {
    case Transport::threads: return "threads";
    case Transport::mpi: return "mpi";
    case Transport::cuda: return "cuda";
    case Transport::nccl: return "nccl";
  }
  return "?";
}

Transport parse_transport(std::string_view name) {
  for (Transport t : {Transport::threads, Transport::mpi, Transport::cuda, Transport::nccl}) {
    if (to_string(t) == name) return t;
  }
  throw Error("--transport '" + std::string(name) + "': expected threads, mpi, cuda or nccl");
}

double allreduce_busbw_factor(int nranks) {
  return nranks <= 0 ? 0.0 : 2.0 * static_cast<double>(nranks - 1) / static_cast<double>(nranks);
}

namespace {

std::size_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return std::numeric_limits<std::size_t>::max();
  return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page);
}

void check_algorithms(const BenchConfig& config) {
  if (config.algorithms.empty()) throw Error("--algo: no algorithm given");
  for (const std::string& id : config.algorithms) {
    if (id == "mpi") {
      if (config.transport != Transport::mpi) throw Error("--algo mpi (MPI_Allreduce) needs --transport mpi");
      continue;
    }
    if (id == "nccl") {
      if (config.transport != Transport::nccl) throw Error("--algo nccl (ncclAllReduce) needs --transport nccl");
      continue;
    }
    const coll::Algorithm& algo = coll::find_algorithm(id);  // throws for unknown ids
    if (algo.collective != coll::Collective::allreduce) {
      throw Error("--algo '" + id + "' is a " + std::string(coll::to_string(algo.collective)) +
                  " algorithm; bench measures allreduce");
    }
    if (algo.in_switch) {  // its last ranks are switches, which no GPU or CPU rank can stand for
      const std::string which = algo.in_network_switch ? "the network's SHARP switch" : "an NVSwitch";
      throw Error("--algo '" + id + "' reduces in the switch (its last rank is " + which +
                  "); bench runs GPU and CPU ranks only: price it with 'colltune simulate --algo " + id + "'");
    }
  }
}

// Each rank holds an input, an output and a reference of max_bytes (plus an fp16 copy when
// compressing) in host memory; the threads and cuda transports hold every rank in this process.
void check_memory(const BenchConfig& config, int nranks) {
  const std::size_t per_rank_buffers = config.compression == coll::Compression::none ? 3 : 4;
  const bool all_here = config.transport == Transport::threads || config.transport == Transport::cuda;
  const std::size_t ranks_here = all_here ? static_cast<std::size_t>(nranks) : 1;
  const std::size_t limit = physical_memory_bytes();
  const std::size_t max = std::numeric_limits<std::size_t>::max();
  if (config.max_bytes > max / per_rank_buffers / ranks_here ||
      config.max_bytes * per_rank_buffers * ranks_here > limit) {
    throw Error("-e " + std::to_string(config.max_bytes) + ": " + std::to_string(ranks_here) + " rank(s) x " +
                std::to_string(per_rank_buffers) + " buffers of that size exceed this machine's memory (" +
                format_bytes(limit) + ")");
  }
}

// --inner matters to the hierarchical algorithms only, but a bad one is a typo wherever it is
// given: ask hierarchical (on a layout it otherwise accepts) whether it takes it.
void check_inner(const BenchConfig& config) {
  const auto reason = coll::find_algorithm("hierarchical").not_applicable(RankLayout::uniform(2, 2), 4, config.algo);
  if (reason) throw Error("--inner " + config.algo.inner + ": " + *reason);
}

void check_rank_count(const BenchConfig& config, int nranks) {
  if (nranks < 1) {
    throw Error(config.transport == Transport::mpi ? "MPI world of " + std::to_string(nranks) + " ranks"
                                                   : "--ranks " + std::to_string(nranks) + ": need at least 1 rank");
  }
  if (config.transport == Transport::threads && nranks > limits::kMaxThreadRanks)
    limits::exceeded("--ranks " + std::to_string(nranks), std::to_string(limits::kMaxThreadRanks) + " threads",
                     limits::kMaxThreadRanksReason);
  if (nranks > limits::kMaxBenchRanks)
    limits::exceeded("bench over " + std::to_string(nranks) + " ranks", std::to_string(limits::kMaxBenchRanks) + " ranks",
                     limits::kMaxBenchRanksReason);
}

// FNV-1a, 64 bits: enough to tell two configurations apart, the same on every machine.
std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t h = 14695981039346656037ULL;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace

std::string effective_config_text(const BenchConfig& c) {
  std::string text = "algorithms=";
  for (const std::string& a : c.algorithms) text += a + ",";
  text += ";bytes=" + std::to_string(c.min_bytes) + ".." + std::to_string(c.max_bytes) + "x" + std::to_string(c.factor);
  text += ";iters=" + std::to_string(c.iters) + ";warmup=" + std::to_string(c.warmup) + ";check=" + (c.check ? "1" : "0");
  text += ";dtype=" + std::string(coll::to_string(c.dtype)) + ";op=" + std::string(coll::to_string(c.op));
  text += ";compression=" + std::to_string(static_cast<int>(c.compression));
  text += ";chunk=" + std::to_string(c.algo.chunk_elems) + ";inner=" + c.algo.inner;
  text += ";ranks_per_host=" + std::to_string(c.ranks_per_host) + ";ranks=" + std::to_string(c.ranks);
  return text;
}

std::uint64_t config_fingerprint(const BenchConfig& config) { return fnv1a(effective_config_text(config)); }

void validate_config(const BenchConfig& config, int nranks) {
  check_rank_count(config, nranks);
  if (config.ranks_per_host < 0) throw Error("--ranks-per-host " + std::to_string(config.ranks_per_host) + ": must be positive");
  if (config.min_bytes > config.max_bytes) {
    throw Error("-b " + std::to_string(config.min_bytes) + " is larger than -e " + std::to_string(config.max_bytes));
  }
  if (config.factor < 2) throw Error("-f " + std::to_string(config.factor) + ": the size factor must be at least 2");
  if (config.iters < 1) throw Error("-n " + std::to_string(config.iters) + ": need at least 1 iteration");
  if (config.warmup < 0) throw Error("-w " + std::to_string(config.warmup) + ": must not be negative");
  if (!(config.timeout_s > 0)) throw Error("--timeout: must be positive");
  if (config.compression != coll::Compression::none && config.dtype != coll::DType::f32 &&
      config.dtype != coll::DType::f64) {
    throw Error("--fp16-compress applies to fp32 and fp64, not -d " + std::string(coll::to_string(config.dtype)));
  }
  check_algorithms(config);
  check_inner(config);
  check_memory(config, nranks);
}

std::vector<std::size_t> sweep_sizes(const BenchConfig& config) {
  const std::size_t es = coll::dtype_size(config.dtype);
  std::vector<std::size_t> sizes;
  std::size_t size = config.min_bytes;
  while (size <= config.max_bytes) {
    const std::size_t rounded = size / es * es;
    if (sizes.empty() || sizes.back() != rounded) sizes.push_back(rounded);
    if (size == 0) {
      size = 1;  // 0 B is a legal first size; the sweep continues from 1 B
      continue;
    }
    if (size > config.max_bytes / config.factor) break;
    size *= config.factor;
  }
  return sizes;
}

}  // namespace colltune::bench

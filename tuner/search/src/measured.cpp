// The measured objective (see measured.hpp): Horovod's cycle loop replayed over MPI.
#include "colltune/tuner/measured.hpp"

#include "colltune/common/error.hpp"

#ifdef COLLTUNE_HAVE_MPI
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <thread>

#include "colltune/collectives/allreduce.hpp"
#include "colltune/collectives/fusion.hpp"
#include "colltune/collectives/mpi.hpp"
#endif

namespace colltune::tuner {

#ifdef COLLTUNE_HAVE_MPI
namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

void wait_until_us(Clock::time_point t0, double us) {
  std::this_thread::sleep_until(t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::micro>(us)));
}

// `query` (MPI_Comm_rank or MPI_Comm_size) on the world, or `fallback` before MPI_Init.
int world_query(int (*query)(MPI_Comm, int*), int fallback) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) return fallback;
  int value = fallback;
  query(MPI_COMM_WORLD, &value);
  return value;
}

class MeasuredObjective final : public Objective {
 public:
  MeasuredObjective(const sim::Workload& workload, MeasuredOptions options)
      : workload_(workload), options_(std::move(options)), comm_(MPI_COMM_WORLD, coll::MpiOptions{coll::ranks_per_host_from_env()}) {
    for (const auto& t : workload_.tensors) {
      offsets_.push_back(total_);
      total_ += t.bytes();
    }
    gradients_.assign(total_, std::byte{0});
    // Small integers in float: every summation order gives the same exact result.
    for (std::size_t i = 0; i + 4 <= total_; i += 4) {
      const float v = static_cast<float>((i / 4) % 7);
      std::memcpy(gradients_.data() + i, &v, 4);
    }
  }
  std::string name() const override { return "measured"; }

  double evaluate(const Candidate& c) override {
    // An algorithm that does not apply to the layout fails identically on every rank at the
    // same collective, so all ranks agree the candidate is infeasible; timeouts are real errors.
    double sum = 0;
    try {
      for (int i = 0; i < options_.warmup + options_.iterations; ++i) {
        const double t = replay_step(c);
        if (i >= options_.warmup) sum += t;
      }
    } catch (const TimeoutError&) {
      throw;
    } catch (const Error&) {
      return std::numeric_limits<double>::infinity();
    }
    return sum / options_.iterations;
  }

 private:
  // Ranks agree on how many tensors (a prefix, in ready order) are ready: the minimum.
  std::size_t negotiate(std::size_t ready_here) {
    unsigned long long local = ready_here, agreed = 0;
    MPI_Allreduce(&local, &agreed, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm_.comm());
    return static_cast<std::size_t>(agreed);
  }

  coll::AllreduceOptions options_for(const Candidate& c, std::size_t bytes) const {
    coll::AllreduceOptions o;
    const auto config = to_step_config(c);
    o.algorithm = config.algorithm;
    o.algo = config.options;
    if (c.algorithm == kAutoAlgorithm) {
      o.algorithm = "ring";
      for (const auto& r : c.hierarchical ? options_.auto_table : options_.auto_table_flat)
        if (bytes >= r.min_bytes && bytes <= r.max_bytes) {
          o.algorithm = r.choice.algorithm;
          if (!r.choice.inner.empty()) o.algo.inner = r.choice.inner;
          o.algo.chunk_elems = r.choice.chunk_bytes / (c.fp16 ? 2 : 4);
        }
    }
    o.compression = c.fp16 ? coll::Compression::fp16 : coll::Compression::none;
    o.timeout_s = options_.timeout_s;
    return o;
  }

  // Packs tensors [first, last) into fusion buffers and allreduces each (copy in, reduce, copy out).
  void reduce_tensors(const Candidate& c, std::size_t first, std::size_t last) {
    std::vector<coll::FusionTensor> list;
    for (std::size_t i = first; i < last; ++i) list.push_back({workload_.tensors[i].count, workload_.tensors[i].dtype});
    for (const auto& buffer : coll::plan_fusion(list, c.fusion_threshold_bytes)) {
      fusion_.resize(std::max(fusion_.size(), buffer.bytes));
      for (const auto& e : buffer.entries)
        std::memcpy(fusion_.data() + e.offset_bytes, gradients_.data() + offsets_[first + e.tensor], e.bytes);
      auto o = options_for(c, buffer.bytes);
      o.dtype = buffer.dtype;
      if (!coll::is_floating(buffer.dtype)) o.compression = coll::Compression::none;
      coll::allreduce(comm_, fusion_.data(), fusion_.data(), buffer.count(), o);
      for (const auto& e : buffer.entries)
        std::memcpy(gradients_.data() + offsets_[first + e.tensor], fusion_.data() + e.offset_bytes, e.bytes);
    }
  }

  double replay_step(const Candidate& c) {
    comm_.barrier(options_.timeout_s);
    const auto t0 = Clock::now();
    wait_until_us(t0, workload_.forward_us);
    const auto tb = Clock::now();
    const auto& tensors = workload_.tensors;
    std::size_t done = 0;
    for (int cycle = 1; done < tensors.size(); ++cycle) {
      wait_until_us(tb, cycle * c.cycle_time_us);
      const double now = us_since(tb);
      std::size_t ready = done;
      while (ready < tensors.size() && tensors[ready].ready_us <= now) ++ready;
      ready = negotiate(ready);
      reduce_tensors(c, done, ready);
      done = ready;
    }
    wait_until_us(tb, workload_.backward_us);
    double local = us_since(t0), slowest = 0;
    MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm_.comm());
    return slowest;
  }

  const sim::Workload& workload_;
  MeasuredOptions options_;
  coll::MpiCommunicator comm_;
  std::vector<std::size_t> offsets_;
  std::size_t total_ = 0;
  std::vector<std::byte> gradients_;
  std::vector<std::byte> fusion_;
};

}  // namespace

int mpi_world_rank() { return world_query(MPI_Comm_rank, 0); }
int mpi_world_size() { return world_query(MPI_Comm_size, 1); }

std::unique_ptr<Objective> make_measured_objective(const sim::Workload& workload, const MeasuredOptions& options) {
  if (options.iterations < 1) throw Error("measured objective: iterations must be >= 1");
  if (options.warmup < 0) throw Error("measured objective: warmup must be >= 0");
  return std::make_unique<MeasuredObjective>(workload, options);
}

#else

int mpi_world_rank() { return 0; }
int mpi_world_size() { return 1; }
std::unique_ptr<Objective> make_measured_objective(const sim::Workload&, const MeasuredOptions&) {
  throw Error("--objective measured needs the MPI transport: rebuild with COLLTUNE_WITH_MPI=ON");
}

#endif

}  // namespace colltune::tuner

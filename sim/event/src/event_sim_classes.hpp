#pragma once
// The contention-free sweep over classes of ranks that provably behave the same
// (event_sim_classes.cpp, event_sim_classes_step.cpp): its cost follows the run's asymmetry (a
// late rank, a segment larger than the others), not its rank count.
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "colltune/collectives/step_source.hpp"
#include "colltune/sim/event_sim.hpp"
#include "colltune/topology/topology.hpp"
#include "event_sim_fold.hpp"

namespace colltune::sim::detail {

// The engine's result for `source` (any start times), computed by classes of identical blocks
// of ranks; nullopt when the run is not one this sweep handles (no structural rotation the
// machine shares, not lockstep, links carrying more than one channel, too many classes), in
// which case nothing is lost but the time spent.
std::optional<EventSimResult> sweep_by_classes(const coll::StepSource& source, const topo::Topology& topology,
                                               const EventSimOptions& options);

// An op with its peer as an offset from its rank, (peer - rank) mod p.
struct RelOp {
  coll::OpKind kind = coll::OpKind::send;
  int offset = 0;
  std::uint16_t channel = 0;
  std::size_t count = 0;
};

// Blocks [start, start + length): rank i of block b starts the current step at
// base[i] + (b - base_start) delta, base the `period` times at states_[state]. Pieces cut from
// one class keep its base, so they stay its continuation; delta is 0 unless the sweep runs in
// affine mode.
struct ClassRun {
  int start = 0;
  int length = 0;
  std::uint32_t state = 0;
  int base_start = 0;
  double delta = 0;
  // How far delta may be from the class's true step (affine mode: delta is estimated from times
  // that carry rounding; 0 in exact mode), us per block.
  double slack = 0;
  // A class of its own this step (a block whose counts differ): its ops are own_ops_[own].
  std::int32_t own = -1;
};

// A transfer's route up to rotation: representative sender i to i + offset on one op channel.
struct ClassRoute {
  double rate = 0;
  double latency_us = 0;
  std::vector<std::uint32_t> classes;
};

class ClassSweep {
 public:
  enum class Outcome { done, asymmetric, refused, affine, crowded };
  // `affine`: classes whose blocks are shifted in time by a constant step (delta) merge too,
  // to rounding; else only blocks at the very same times do.
  ClassSweep(const coll::StepSource& source, const topo::Topology& topology, const EventSimOptions& options, int period,
             bool affine);
  Outcome run();
  EventSimResult result() const;

 private:
  // event_sim_classes.cpp: the classes
  void start_classes();
  bool load_template(std::size_t step);
  bool relative_ops(int rank, std::size_t step, std::vector<RelOp>& out);
  void isolate(int block, std::size_t step);
  std::size_t run_of(int block) const;
  void split(std::size_t index, int members);
  void align();
  void cuts_of(const ClassRun& run, std::vector<int>& cuts) const;
  bool continues(const ClassRun& a, const ClassRun& b) const;
  void merge();
  bool mergeable(const ClassRun& a, const ClassRun& b, double& delta, double& slack) const;
  bool same_step(const ClassRun& a, const ClassRun& b, int span) const;
  bool too_many_classes() const;

  // event_sim_classes_step.cpp: one step of every class
  Outcome advance();
  Outcome rank_step(const ClassRun& run, int i, double& t_new);
  double time_of(const ClassRun& run, int block, int i) const;
  const std::vector<RelOp>& ops_of(const ClassRun& run, int i) const;
  const RelOp* partner(const ClassRun& peer_run, int peer_index, const RelOp& op) const;
  const ClassRoute* route(int sender_index, int offset, std::uint16_t channel, Outcome& failure);
  void record(const ClassRun& run, const ClassRoute& route, double bytes, double duration);

  int block_shift(int i, int offset) const { return ((i + offset) / period_) % blocks_; }
  int wrap(int block) const { return block % blocks_; }
  const double* base(const ClassRun& run) const { return &states_[run.state * static_cast<std::size_t>(period_)]; }

  const coll::StepSource& source_;
  const topo::Topology& topology_;
  EventSimOptions options_;
  int nranks_;
  int period_;
  int blocks_;
  bool affine_;
  bool one_start_ = true;
  Fold fold_;
  std::vector<ClassRun> runs_;  // by start, covering every block once, none wrapping past the last
  std::vector<ClassRun> scratch_runs_;
  std::vector<double> states_;  // `period` times per state
  std::vector<double> next_states_;
  std::vector<std::vector<RelOp>> template_;  // this step's ops of every regular rank, by index
  std::vector<std::vector<RelOp>> own_ops_;   // the isolated blocks' ops, `period` lists each
  std::size_t own_used_ = 0;
  std::vector<int> irregular_;
  std::vector<coll::Op> scratch_;
  std::vector<double> gamma_;  // by rank index (every block alike: ranks_rotate)
  using RouteKey = std::tuple<int, int, std::uint16_t>;  // (sender rank index, offset, op channel)
  std::deque<ClassRoute> routes_;
  std::map<RouteKey, const ClassRoute*> route_of_;
  std::vector<std::vector<std::tuple<int, std::uint16_t, const ClassRoute*>>> route_cache_;  // by sender index
  std::vector<RouteKey> class_owner_;
  std::vector<std::vector<double>> bytes_diff_;  // by class: per block, differences (prefix-summed at the end)
  std::vector<std::vector<double>> busy_diff_;
  std::size_t events_ = 0;
  std::size_t flows_ = 0;
  std::size_t max_runs_ = 0;
  std::vector<std::pair<double, double>> reduces_;  // scratch: (arrival, bytes)
  std::vector<int> cuts_;
};

}  // namespace colltune::sim::detail

#pragma once
// Step-by-step read access to a schedule (the IR of schedule.hpp, same semantics).
//
// Interpreters that walk every rank's steps in time order (the event simulator) read a schedule
// through StepSource, so that a large regular schedule can be generated one step at a time
// instead of stored: a 4096-rank ring with one chunk per segment has 33.5 M transfers, about
// 1.6 GB as a stored Schedule and a few hundred bytes as a generator. A generated schedule is
// not a second definition: the algorithm's build() is materialize() of its generator, so the
// steps an executor runs and the steps the simulator times come from one piece of code.
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "colltune/collectives/registry.hpp"
#include "colltune/collectives/schedule.hpp"
#include "colltune/common/rank_layout.hpp"

namespace colltune::coll {

// Everything of a Schedule but its steps.
struct ScheduleHeader {
  std::string algorithm;
  Collective collective = Collective::allreduce;
  int nranks = 0;
  std::size_t count = 0;
  std::vector<Block> owned;
  int helpers = 0;  // Schedule::helpers
};

class StepSource {
 public:
  explicit StepSource(ScheduleHeader header) : header_(std::move(header)) {}
  StepSource(const StepSource&) = delete;
  StepSource& operator=(const StepSource&) = delete;
  virtual ~StepSource() = default;

  const ScheduleHeader& header() const { return header_; }
  // Steps of `rank`, 0 <= rank < nranks. A generated step may have no ops (an empty chunk):
  // interpreters skip it and materialize() drops it.
  virtual std::size_t num_steps(int rank) const = 0;
  // The ops of step `step` < num_steps(rank) of `rank`, in order. The span stays valid until
  // `scratch` is used again (a stored source returns its own storage and leaves scratch alone).
  // num_steps() and ops() may be called from several threads at once, each with its own
  // scratch (the event simulator walks a schedule ahead of its queue on a second thread): a
  // source keeps no state that a call changes.
  virtual std::span<const Op> ops(int rank, std::size_t step, std::vector<Op>& scratch) const = 0;
  // A rotation the schedule is invariant under, for interpreters that exploit symmetry: the
  // smallest d > 0 such that rank (r + d) mod p has as many steps as rank r and its step s has
  // the ops of rank r's step s with every peer q replaced by (q + d) mod p and the same kinds,
  // channels and element counts (offsets may differ). 0 when the source declares none.
  virtual int rotation_period() const { return 0; }
  // The same for XOR: the smallest power of two d > 0 such that for every multiple m of d below
  // p (a power of two), rank r xor m has as many steps as rank r and its step s has the ops of
  // rank r's step s with every peer q replaced by q xor m, the same kinds, channels and element
  // counts (recursive halving-doubling on equal segments: d = 1). 0 when none is declared.
  virtual int xor_period() const { return 0; }
  // The rotation the schedule's structure is invariant under, counts aside: the smallest d > 0
  // dividing p such that rank (r + d) mod p has as many steps as rank r and its step s has the
  // ops of rank r's step s, in order, with every peer q replaced by (q + d) mod p, the same
  // kinds and channels, and the same element counts except at the ranks irregular_ranks lists
  // for that step (whose ops may also be fewer: empty chunks are dropped). rotation_period()
  // where one is declared (then no rank is irregular); 0 when none is.
  virtual int structure_period() const { return rotation_period(); }
  // The ranks whose ops at `step` may differ from the others' (see structure_period): every rank
  // not listed has the ops of every other unlisted rank at the same offset within its block of
  // structure_period() ranks, rotated. A rank may be listed more than once. Cleared first.
  virtual void irregular_ranks(std::size_t /*step*/, std::vector<int>& out) const { out.clear(); }
  // Whether turning every host's ranks by one place (the rank at place l of
  // layout.ranks_on_host(h) to place l + 1 mod L, on every host at once) maps the schedule onto
  // itself: every rank has as many steps as its host's first rank, and in each step, per peer and
  // direction, that rank's ops (kinds and element counts) in the same order, peers turned by the
  // rank's place. The symmetry the reference pricer folds hosts on
  // (sim/analytic/src/pricer_engine.hpp), declared by a source that proves it on its own
  // structure, for the layout it was made for; false where none is declared (the pricer then
  // compares the ops). Where the schedule's helpers are the hosts' switches (each host's last
  // rank; nccl_nvls_tree), the turn moves the GPUs only and a switch stays itself: its ops turned
  // are its own, except that a block it receives may be copied from one GPU where it is reduced
  // from the others (the pricer folds that only where the switch's sums take no time).
  virtual bool turns_with_hosts(const RankLayout& /*layout*/) const { return false; }
  // Whether reading the ranks from the other end (rank r as rank p-1-r) maps the schedule onto
  // itself: rank p-1-r has as many steps as rank r, and in each step, per peer and direction,
  // rank r's ops (kinds and element counts), each peer q as p-1-q, in reverse order (dbtree lists
  // its first tree's ops before its second's, and the mirror swaps the trees). The symmetry the
  // reference pricer halves a run on (sim/analytic/src/pricer_engine.hpp), declared by a source
  // that proves it on its own structure (dbtree's two trees, on an even rank count and an even
  // element count); false where none is declared.
  virtual bool mirrors_ranks() const { return false; }

 private:
  ScheduleHeader header_;
};

// A stored Schedule seen as a StepSource: a view of `schedule` (which must outlive it), or the
// owner of a schedule moved in.
class StoredSteps final : public StepSource {
 public:
  explicit StoredSteps(const Schedule& schedule);
  // `xor_period`: the symmetry its builder declares for it (StepSource::xor_period).
  explicit StoredSteps(Schedule&& schedule, int xor_period = 0);
  std::size_t num_steps(int rank) const override;
  std::span<const Op> ops(int rank, std::size_t step, std::vector<Op>& scratch) const override;
  int xor_period() const override { return xor_period_; }
  // True when it owns its schedule (it was moved in); take() then moves it out, leaving the
  // source empty.
  bool owns() const { return owned_ != nullptr; }
  Schedule take();

 private:
  std::unique_ptr<Schedule> owned_;
  const Schedule* schedule_;
  int xor_period_ = 0;
};

// The stored Schedule of a source: every rank's steps in order, empty steps dropped.
Schedule materialize(const StepSource& source);

// Algorithm `id`'s schedule as a StepSource (Algorithm::schedule: generated step by step for the
// ring family, built and owned otherwise), after the registry's applicability checks; throws
// colltune::Error naming an unknown id or why the algorithm does not apply.
std::unique_ptr<StepSource> open_schedule(std::string_view id, const RankLayout& layout, std::size_t count,
                                          const AlgoOptions& options = {});

}  // namespace colltune::coll

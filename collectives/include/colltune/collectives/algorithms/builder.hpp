#pragma once
// Helpers the algorithm files share: a builder that places operations at (phase, time step)
// positions so that concurrent operations of one rank land in one Step, and the machine-model
// pieces every cost hint uses.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "colltune/collectives/registry.hpp"
#include "colltune/collectives/schedule.hpp"
#include "colltune/common/rank_layout.hpp"

namespace colltune::coll::algo {

class ScheduleBuilder {
 public:
  ScheduleBuilder(std::string id, Collective collective, int nranks, std::size_t count);

  // Starts a new phase: time steps restart at 0 and every later operation goes into new steps.
  void begin_phase() { ++phase_; }
  // A message at time step t of the current phase (t non-decreasing per rank within a phase):
  // `from` sends `src`, `to` receives it into `dst` (reducing or copying). Empty blocks are
  // skipped: nothing is sent. Both ops carry `channel` (Op::channel).
  void message(int t, int from, int to, const Block& src, const Block& dst, bool reduce, std::uint16_t channel = 0);
  void message(int t, int from, int to, const Block& block, bool reduce, std::uint16_t channel = 0) {
    message(t, from, to, block, block, reduce, channel);
  }
  // Appends `sub` (built for ranks 0..k-1 over [0, sub.count)) as a phase of its own: sub rank i
  // becomes rank `ranks[i]`, element e becomes element `offset + e`.
  void append(const Schedule& sub, const std::vector<int>& ranks, std::size_t offset);
  void set_owned(std::vector<Block> owned) { schedule_.owned = std::move(owned); }
  // The last n ranks are helpers, not data ranks (Schedule::helpers).
  void set_helpers(int n) { schedule_.helpers = n; }
  Schedule finish() { return std::move(schedule_); }

 private:
  void add(int rank, int t, const Op& op);
  Schedule schedule_;
  int phase_ = 0;
  std::vector<long long> last_key_;  // per rank: (phase, t) of its last step
};

// ---- machine model pieces for cost hints (README.md, "Cost model of the hints") ------------------
struct Wire {
  double alpha = 0;  // us per message
  double beta = 0;   // us per byte
};
Wire wire(const RankLayout& layout, int a, int b, const LevelCosts& costs);

// The messages of one step that all begin together: which link levels they use, and how many
// of them leave or enter one host at most (they share its NICs: LevelCosts::beta_host).
class Levels {
 public:
  // `costs` gives the network's groups of hosts (LevelCosts::host_group, near_group), if any.
  explicit Levels(const LevelCosts& costs) : groups_(&costs.host_group), costs_(&costs) {}
  void add(const RankLayout& layout, int a, int b);
  bool intra() const { return intra_; }
  bool inter() const { return crossing_ > 0; }
  // The latency of the step's inter-host messages: the largest of theirs (inter_alpha_us).
  double inter_alpha_us() const { return inter_alpha_; }
  // Most messages crossing out of, or into, one host.
  int crossing_per_host() const { return crossing_; }
  // Most messages crossing out of, or into, one group of hosts (its trunk).
  int crossing_per_group() const { return group_crossing_; }

 private:
  const std::vector<int>* groups_;
  const LevelCosts* costs_;
  double inter_alpha_ = 0;
  bool intra_ = false;
  int crossing_ = 0;
  int group_crossing_ = 0;
  std::vector<int> out_, in_;              // per host
  std::vector<int> group_out_, group_in_;  // per group
};
// Slowest single message of `bytes` over the levels present: max_l (alpha_l + bytes * beta_l),
// an inter-host message taking at least its share of its host's NICs and of its group's trunk.
double message_time(const Levels& levels, double bytes, const LevelCosts& costs);
// us per byte of an inter-host message when `crossing` messages share its host's NICs and
// `group_crossing` its group's trunk.
double inter_beta(const LevelCosts& costs, int crossing, int group_crossing = 0);

// Elements of a cost request: bytes / elem_size rounded up (elem_size 0 counts as 1).
std::size_t elements_of(std::size_t bytes, std::size_t elem_size);

}  // namespace colltune::coll::algo

#pragma once
// The reference pricer's event loop (pricer.hpp states the machine model), written once for two
// kinds of numbers: plain doubles (price_schedule) and the parametric numbers of
// parametric_pricer.hpp, which carry with each time its affine form in a size parameter.
//
// A small event-driven run of the schedule in time order. Three kinds of events: a message
// leaves one of its two ports, a message arrives, a step ends after its reductions. Ports serve
// their messages by processor sharing, kept with a virtual clock per port: while m messages are
// in service the clock runs at 1/m, and a message of work w that joins at virtual time v leaves
// when the clock reaches v + w. Each busy port has one pending leave (port_leaves.hpp), replaced
// whenever its set in service changes, and numbered as a fresh event would be; arrivals and step
// ends wait in the event queue; the loop takes whichever of the two comes first.
//
// Every decision of the loop (which message leaves a port first, the later of two times, which
// of a pair's ops came first) is a comparison made through the Clock, so that the parametric
// clock can record the range of the parameter over which each decision stays the same; and
// every piece of state (a port, a rank, a pair's queue) tells the clock the times it is touched
// at (Clock::in_order), which must keep their order. The order in which the event queue hands
// out events that touch no common state does not change any number, so the queue compares
// quietly (Clock::quiet_less): a parametric run is valid wherever each piece of state sees its
// events in the same order and every decision goes the same way. The plain clock compares
// doubles, as the loop always did.
//
// Copies of one message are moved as one (coalesce): a rank's step that holds several ops of one
// kind to one peer with blocks of one size, in a row among its ops to that peer (NVLS: every
// GPU's shards to its switch; nccl_tree: the chain's two trees), posts them as one op of that
// weight. The copies pair with their partner's copies in order, as many at a time as both have
// posted (a partner that posts them over several steps takes them in parts), begin together and
// share every port they pass as that many messages would: a port serves its messages by
// processor sharing weighted by their copies, so w copies of work x in service with others get
// w shares and leave together, when each has had x. The same numbers as the ops one by one:
// messages due at one virtual time leave at one real time (Port::leave), and the w reductions
// of a block are w blocks.
//
// Hosts whose ranks take turns (fold): where rotating every host's ranks by one place (local
// rank l to l + 1 mod L, on every host at once) maps the schedule onto itself, op for op with
// each pair's ops in their order (nccl_tree's chains are one order rotated, one per channel),
// and the machine too (its costs are per level, per host and per network group), every rank of
// a host does at every moment what its host's first rank does, rotated. The loop then runs the
// first rank of each host only: a message between ranks is kept as its turn that starts at a
// host's first rank, its receiver's state and ports are the receiver's host's first rank's (a
// rank l places on is that rank turned l times), and a host's NICs and its group's trunk carry
// its L turns, so it counts as L messages there. Its prices are the whole run's (its times are
// the first ranks'); rotation_period() checks the symmetry on the schedule itself.
// A host's NVSwitch, where the schedule has one as a helper (nccl_nvls, nccl_nvls_tree: each
// host's last rank, priced by its links, LevelCosts::switch_helpers), is a fixed point of the
// turn: turning its host's GPUs maps it onto itself, and its ops with GPU l are its ops with GPU
// 0 turned l times, on GPU l's own link to it. The loop then runs each switch too, with its ops
// towards each host's first GPUs only (the others are their turns, on ports of their own): the
// 16-host NVLS-Tree of 144 ranks runs 32. A switch copies GPU 0's block and reduces the others'
// (schedule.hpp's helper rule), so its ops differ in kind between GPUs: they count as turns of
// one another only where the switch's reductions take no time (switch_gamma_us_per_byte 0, the
// presets' NVLS), else the run is not folded.
//
// Ranks read from the other end (mirror): where rank p-1-r does what rank r does with every peer
// q as p-1-q (dbtree's second tree is its first read from the other end: StepSource::
// mirrors_ranks), and the machine looks the same from both ends (rank p-1-r on host H-1-h where
// r is on host h, every host's ranks on one side of the middle, and the host groups, trunks and
// near groups alike, mapped onto one another, no trunk onto itself), rank p-1-r's times are rank
// r's. The loop then runs ranks 0..p/2-1 only, when the run is not folded on hosts: a message
// whose sender is in the upper half is kept as its mirror (both ends read from the other end),
// and every port of the upper half (a rank's, a host's NICs, a group's trunk) is its mirror's in
// the lower half, which carries, at the same times, exactly the mirrors of its messages. The
// source lists a peer's ops on the mirror in reverse order (dbtree: a step lists its first tree's
// ops before its second's), so a kept rank posts its receives from the upper half, per sender, in
// reverse: as the mirror it stands for receives them, paired first come, first served.
#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <cstdint>
#include <queue>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "colltune/collectives/step_source.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/rank_layout.hpp"
#include "port_leaves.hpp"

namespace colltune::sim::detail {

// An op as the pricer reads it: its size in bytes as the clock's number.
template <class Num>
struct PricedOp {
  coll::OpKind kind = coll::OpKind::send;
  int peer = 0;
  std::size_t count = 0;  // elements (at the query, for the messages)
  Num bytes{};
  std::uint32_t copies = 1;  // ops it stands for (coalesce)
};

// Plain doubles: the reference pricer itself.
struct PlainClock {
  using Num = double;
  bool less(double x, double y) { return x < y; }
  bool equal(double x, double y) { return x == y; }
  bool positive(double x) { return x > 0; }
  void in_order(double /*earlier*/, double /*later*/) {}
  static bool quiet_less(double x, double y) { return x < y; }
  static bool quiet_equal(double x, double y) { return x == y; }
  // Whether two blocks of one count are of one size (their copies coalesce).
  static bool same_size(double x, double y) { return x == y; }
};

// Reads a source's ops for the plain pricer.
class PlainReader {
 public:
  PlainReader(const coll::StepSource& source, std::size_t elem_size) : source_(source), elem_(elem_size) {}
  const coll::ScheduleHeader& header() const { return source_.header(); }
  std::size_t num_steps(int rank) const { return source_.num_steps(rank); }
  // The source's own proof of the fold's symmetry (StepSource::turns_with_hosts).
  bool turns_with_hosts(const RankLayout& layout) const { return source_.turns_with_hosts(layout); }
  // The source's own proof of the mirror (StepSource::mirrors_ranks).
  bool mirrors_ranks() const { return source_.mirrors_ranks(); }
  void ops(int rank, std::size_t step, std::vector<PricedOp<double>>& out) {
    out.clear();
    for (const coll::Op& op : source_.ops(rank, step, scratch_))
      out.push_back({op.kind, op.peer, op.block.count, static_cast<double>(op.block.count * elem_)});
  }

 private:
  const coll::StepSource& source_;
  std::size_t elem_;
  std::vector<coll::Op> scratch_;
};

// The loop over a Reader (PlainReader, or parametric_pricer's reader of two sources) with a
// Clock's numbers.
template <class Clock, class Reader>
class PricerEngine {
 public:
  using Num = typename Clock::Num;

  // `shortcuts` false: every op its own message and every rank run (price_schedule_op_by_op,
  // for tests): no copies coalesced, no hosts folded.
  PricerEngine(Reader& reader, Clock& clock, const RankLayout& layout, const coll::LevelCosts& costs,
               bool shortcuts = true)
      : reader_(reader),
        clock_(clock),
        layout_(layout),
        costs_(costs),
        coalesce_copies_(shortcuts),
        fold_allowed_(shortcuts),
        ranks_(static_cast<std::size_t>(reader.header().nranks)),
        ports_(4 * static_cast<std::size_t>(reader.header().nranks) + 2 * static_cast<std::size_t>(layout.nhosts()) +
                   2 * groups(costs),
               Port(&clock, &messages_)),
        pairs_(static_cast<std::size_t>(reader.header().nranks)),
        events_(EventLater{}) {}

  Num run() {
    fold_ = fold_allowed_ ? rotation_period() : 0;
    if (fold_ == 0) stand_in_.clear();
    if (fold_allowed_ && fold_ == 0 && mirror_holds()) keep_lower_half();
    for (int r = 0; r < static_cast<int>(ranks_.size()); ++r)
      if (runs(r)) post(r, Num{});
    while (!events_.empty() || !leaves_.empty()) {
      if (!leaves_.empty() && (events_.empty() || !EventLater{}(leaves_.top(), events_.top()))) {
        const Event ev = leaves_.top();
        leave_port(ev.id, ev.t);
        continue;
      }
      const Event ev = events_.top();
      events_.pop();
      handle(ev);
    }
    Num last{};
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
      if (!runs(static_cast<int>(r))) continue;
      if (!ranks_[r].done)
        throw Error("schedule '" + reader_.header().algorithm + "' deadlocks: rank " + std::to_string(r) +
                    " waits forever in step " + std::to_string(ranks_[r].step));
      last = max(last, ranks_[r].finish);
    }
    return last;
  }

  // The hosts' ranks per turn when the run is folded, 0 when it runs every rank.
  int folded() const { return fold_; }
  // Whether the run keeps the lower half of the ranks only (the mirror).
  bool mirrored() const { return half_ > 0; }

 private:
  Num max(const Num& x, const Num& y) { return clock_.less(x, y) ? y : x; }

  // --- Folding hosts whose ranks take turns (the top of the file) ---

  // Whether rank r is run: every rank, or the ranks that stand for themselves (each host's
  // first when folded, the lower half when mirrored).
  bool runs(int r) const { return stand_in_.empty() || stand_in_[static_cast<std::size_t>(r)] == r; }
  // The rank whose state and ports stand for r: itself, its host's first when folded, its mirror
  // for the upper half when mirrored.
  int state_of(int r) const { return stand_in_.empty() ? r : stand_in_[static_cast<std::size_t>(r)]; }
  // The rank k places after r on its host, turning (0 <= k < L); a switch stays itself.
  int turned(int r, int k) const {
    if (in_switch(r)) return r;
    const auto l = static_cast<std::size_t>(local_[static_cast<std::size_t>(r)]);
    return layout_.ranks_on_host(
        layout_.host_of(r))[(l + static_cast<std::size_t>(k)) % static_cast<std::size_t>(fold_)];
  }

  // L where every host has the same L >= 2 ranks (GPUs, and as its last rank its switch where the
  // schedule's helpers are the hosts' switches), and every rank's steps are its host's first
  // rank's turned by its local rank: the same steps, and in each step, per peer and direction, the
  // same ops (kind, count, size) in the same order, peers turned; and every switch's steps are
  // their own turns (switch_turns). Else 0. Compared op by op, unless the source proves it
  // (StepSource::turns_with_hosts).
  int rotation_period() {
    const coll::ScheduleHeader& h = reader_.header();
    if (h.nranks != layout_.nranks() || layout_.nhosts() < 1) return 0;
    const bool switches = h.helpers != 0;
    if (switches && !(costs_.switch_helpers && h.helpers == layout_.nhosts())) return 0;
    const std::size_t per_host = layout_.ranks_on_host(0).size();
    const std::size_t L = per_host - (switches ? 1 : 0);
    if (per_host < 1 || L < 2) return 0;
    for (int host = 0; host < layout_.nhosts(); ++host) {
      const std::vector<int>& on = layout_.ranks_on_host(host);
      if (on.size() != per_host) return 0;
      for (std::size_t l = 0; l < per_host; ++l)
        if (in_switch(on[l]) != (switches && l == L)) return 0;  // the switch last, the GPUs before
    }
    const auto p = static_cast<std::size_t>(h.nranks);
    local_.assign(p, 0);
    stand_in_.assign(p, 0);
    for (int host = 0; host < layout_.nhosts(); ++host) {
      const std::vector<int>& on = layout_.ranks_on_host(host);
      for (std::size_t l = 0; l < L; ++l) {
        local_[static_cast<std::size_t>(on[l])] = static_cast<int>(l);
        stand_in_[static_cast<std::size_t>(on[l])] = on[0];
      }
      if (switches) stand_in_[static_cast<std::size_t>(on[L])] = on[L];  // its own, run
    }
    fold_ = static_cast<int>(L);
    // The source proves it (a switch's copied block among reduced ones: where its sums are free).
    if (reader_.turns_with_hosts(layout_)) return !switches || switch_sums_free() ? fold_ : (fold_ = 0);
    // Each host's first rank's step is read once and compared, turned, with each of its mates'.
    std::vector<PricedOp<Num>> first_ops, mine, theirs;
    for (int host = 0; host < layout_.nhosts(); ++host) {
      const std::vector<int>& on = layout_.ranks_on_host(host);
      const std::size_t steps = reader_.num_steps(on[0]);
      for (std::size_t l = 1; l < L; ++l)
        if (reader_.num_steps(on[l]) != steps) return fold_ = 0;
      for (std::size_t step = 0; step < steps; ++step) {
        reader_.ops(on[0], step, first_ops);
        for (std::size_t l = 1; l < L; ++l) {
          reader_.ops(on[l], step, mine);
          if (mine.size() != first_ops.size()) return fold_ = 0;
          theirs = first_ops;
          for (PricedOp<Num>& op : theirs) op.peer = turned(op.peer, static_cast<int>(l));
          if (!same_per_pair(mine, theirs)) return fold_ = 0;
        }
      }
      if (switches && !switch_turns(on[L])) return fold_ = 0;
    }
    return fold_;
  }

  // --- Ranks read from the other end (the top of the file) ---

  int mirror_of(int r) const { return layout_.nranks() - 1 - r; }

  // The run keeps ranks below p/2, each standing for itself and for its mirror.
  void keep_lower_half() {
    half_ = layout_.nranks() / 2;
    stand_in_.resize(static_cast<std::size_t>(layout_.nranks()));
    for (int r = 0; r < layout_.nranks(); ++r) stand_in_[static_cast<std::size_t>(r)] = std::min(r, mirror_of(r));
  }

  // Whether the run may keep the lower half of the ranks: the source's proof, an even rank
  // count, no switch helpers, and a machine that looks the same from both ends (the source's
  // word first: the machine's checks read every rank and host, on every run).
  bool mirror_holds() const {
    const coll::ScheduleHeader& h = reader_.header();
    const int p = layout_.nranks();
    const int hosts = layout_.nhosts();
    if (!reader_.mirrors_ranks() || h.nranks != p || p < 2 || p % 2 != 0 || h.helpers != 0) return false;
    for (int r = 0; r < p; ++r) {
      const int host = layout_.host_of(r);
      if (layout_.host_of(mirror_of(r)) != hosts - 1 - host) return false;
      // A host's NICs stand for one host's only: its ranks all on one side (a lone host sends
      // nothing through them).
      if (hosts > 1 && (2 * host < hosts) != (2 * r < p)) return false;
    }
    if (hosts > 1 && costs_.beta_group_us_per_byte > 0 && !groups_mirror(costs_.host_group, true)) return false;
    return hosts <= 1 || costs_.near_group.empty() || groups_mirror(costs_.near_group, false);
  }

  // Whether reading the hosts from the other end maps the groups onto one another: hosts of one
  // group have mirrors of one group, hosts of different groups mirrors of different groups (a
  // host past the list is a group of its own, as inter_alpha_us reads it). `one_side`: and no
  // group holds hosts of both halves (a trunk's port stands for one trunk's only).
  bool groups_mirror(const std::vector<int>& group, bool one_side) const {
    const int hosts = layout_.nhosts();
    const auto label = [&](int h) {
      return static_cast<std::size_t>(h) < group.size() ? group[static_cast<std::size_t>(h)] : -1 - h;
    };
    std::unordered_map<int, int> to_mirror, from_mirror, side;
    for (int h = 0; h < hosts; ++h) {
      const int g = label(h);
      const int m = label(hosts - 1 - h);
      if (to_mirror.emplace(g, m).first->second != m || from_mirror.emplace(m, g).first->second != g) return false;
      const int lower = 2 * h < hosts ? 1 : 0;
      if (one_side && side.emplace(g, lower).first->second != lower) return false;
    }
    return true;
  }

  // A kept rank's receives from the upper half stand for its mirror's, which lists each sender's
  // ops in reverse (StepSource::mirrors_ranks): reversed per sender, in place among the others.
  // Each sender's are reversed at its first receive (a step holds a few ops: no allocation).
  void reverse_mirrored_receives(std::vector<PricedOp<Num>>& ops) {
    const auto mirrored_receive = [&](std::size_t i, int sender) {
      return ops[i].kind != coll::OpKind::send && ops[i].peer >= half_ && (sender < 0 || ops[i].peer == sender);
    };
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (!mirrored_receive(i, -1)) continue;
      std::vector<std::size_t>& at = mirrored_at_;
      at.clear();
      for (std::size_t j = 0; j < ops.size(); ++j)
        if (mirrored_receive(j, ops[i].peer)) at.push_back(j);
      if (at.front() != i) continue;  // this sender's, reversed already
      for (std::size_t a = 0, b = at.size() - 1; a < b; ++a, --b) std::swap(ops[at[a]], ops[at[b]]);
    }
  }

  // Whether every step of switch s holds, for each GPU it talks to, the ops it holds for that
  // GPU's host's first GPU, turned: per direction the same ops in the same order, a reduced block
  // counting as a copied one where the switch's reductions take no time. Its ops are sorted by
  // (peer's first GPU, direction, peer's place), keeping their order, and each place's run
  // compared with the first's.
  bool switch_turns(int s) {
    const bool free_sums = switch_sums_free();
    const auto send = [](const PricedOp<Num>& op) { return op.kind == coll::OpKind::send; };
    const auto key = [&](const PricedOp<Num>& op) {
      const auto q = static_cast<std::size_t>(op.peer);
      return std::tuple(stand_in_[q], send(op), local_[q]);
    };
    std::vector<PricedOp<Num>> ops;
    for (std::size_t step = 0; step < reader_.num_steps(s); ++step) {
      reader_.ops(s, step, ops);
      for (const PricedOp<Num>& op : ops)
        if (op.peer < 0 || op.peer >= layout_.nranks() || in_switch(op.peer)) return false;
      std::stable_sort(ops.begin(), ops.end(), [&](const auto& x, const auto& y) { return key(x) < key(y); });
      // Runs of one (first GPU, direction): L places, each as long as place 0's and alike.
      for (std::size_t begin = 0; begin < ops.size();) {
        const auto [first, out, place] = key(ops[begin]);
        std::size_t run = begin;
        while (run < ops.size() && key(ops[run]) == std::tuple(first, out, place)) ++run;
        const std::size_t n = run - begin;
        if (place != 0 || begin + n * static_cast<std::size_t>(fold_) > ops.size()) return false;
        for (std::size_t i = begin + n; i < begin + n * static_cast<std::size_t>(fold_); ++i) {
          const PricedOp<Num>& a = ops[i];
          const PricedOp<Num>& b = ops[begin + (i - begin) % n];
          const bool kinds = a.kind == b.kind || (free_sums && !send(a) && !send(b));
          if (key(a) != std::tuple(first, out, static_cast<int>((i - begin) / n)) || !kinds || a.count != b.count ||
              !Clock::same_size(a.bytes, b.bytes))
            return false;
        }
        begin += n * static_cast<std::size_t>(fold_);
      }
    }
    return true;
  }

  // Whether a switch's reductions take no time: then a block it copies from one GPU and reduces
  // from another cost the same, and its ops with different GPUs are turns of one another.
  bool switch_sums_free() const { return costs_.switch_gamma_us_per_byte == 0; }

  // Whether two steps hold, per peer and direction, the same ops in the same order.
  static bool same_per_pair(std::vector<PricedOp<Num>>& a, std::vector<PricedOp<Num>>& b) {
    const auto by_pair = [](const PricedOp<Num>& x, const PricedOp<Num>& y) {
      const bool xs = x.kind == coll::OpKind::send, ys = y.kind == coll::OpKind::send;
      return x.peer != y.peer ? x.peer < y.peer : xs < ys;
    };
    // A step holds a few dozen ops: an insertion sort (stable, in place) costs less than
    // std::stable_sort's buffer.
    const auto sort = [&](std::vector<PricedOp<Num>>& v) {
      for (std::size_t i = 1; i < v.size(); ++i) {
        PricedOp<Num> op = v[i];
        std::size_t j = i;
        for (; j > 0 && by_pair(op, v[j - 1]); --j) v[j] = v[j - 1];
        v[j] = op;
      }
    };
    sort(a);
    sort(b);
    for (std::size_t i = 0; i < a.size(); ++i)
      if (a[i].kind != b[i].kind || a[i].peer != b[i].peer || a[i].count != b[i].count ||
          !Clock::same_size(a[i].bytes, b[i].bytes))
        return false;
    return true;
  }

  struct Message {
    std::uint64_t number = 0;  // its place in the order messages began (ties at a port)
    int from = 0;
    int to = 0;
    Num bytes{};
    double alpha = 0;
    bool reduce = false;
    std::uint32_t copies = 1;  // identical messages moved as one
    int ports_left = 0;
    // When it last left one of its ports (its start before): it arrives alpha after the last
    // of them, whichever the queue hands out last, so their order is a decision (in_order).
    Num left{};
  };

  // A port shared equally among the messages in service (processor sharing).
  class Port {
   public:
    Port(Clock* clock, const std::vector<Message>* messages) : queue_(EntryLater{clock, messages}) {}
    bool idle() const { return queue_.empty(); }
    // The real time at which the next message leaves (not idle).
    Num next_leave(Clock& clock) const {
      const Num t = now_ + (queue_.top().leave - clock_) * static_cast<double>(copies_);
      return clock.less(now_, t) ? t : now_;
    }
    // The message in `slot`, `copies` identical ones, joins with `work` each at time t.
    void join(Clock& clock, const Num& t, const Num& work, std::uint32_t slot, std::uint32_t copies) {
      advance(clock, t);
      queue_.push(Entry{clock_ + work, slot, copies});
      copies_ += copies;
    }
    // The slot of the message that leaves at time t.
    std::uint32_t leave(Clock& clock, const Num& t) {
      advance(clock, t);
      const Entry top = queue_.top();
      queue_.pop();
      copies_ -= top.copies;
      // The clock has reached the message's virtual leave time: it reads exactly that, so that
      // messages due at the same virtual time leave at the same real time. (Recomputed from
      // the real times, it drifted by rounding, and messages that should tie left a few ulps
      // apart, in an order the rest of the run could amplify: up to 0.1% on 512 ranks.)
      clock_ = top.leave;
      return top.slot;
    }

   private:
    void advance(Clock& clock, const Num& t) {
      clock.in_order(now_, t);
      if (!queue_.empty()) clock_ = clock_ + (t - now_) / static_cast<double>(copies_);
      now_ = t;
    }
    // A message in service: equal virtual leave times leave in the order the messages began.
    struct Entry {
      Num leave{};               // virtual leave time
      std::uint32_t slot = 0;    // where the message is kept (messages_)
      std::uint32_t copies = 1;  // its shares of the port
    };
    struct EntryLater {
      Clock* clock;
      const std::vector<Message>* messages;
      bool operator()(const Entry& x, const Entry& y) const {
        if (clock->less(y.leave, x.leave)) return true;
        if (clock->less(x.leave, y.leave)) return false;
        return (*messages)[x.slot].number > (*messages)[y.slot].number;
      }
    };
    // A port serves one or two messages at a time, mostly: kept inline, a run allocates nothing
    // per port (16,384 ranks: a fifth of a double binary tree's run was allocating).
    std::priority_queue<Entry, boost::container::small_vector<Entry, 2>, EntryLater> queue_;
    std::uint64_t copies_ = 0;  // messages in service, each message's copies counted
    Num clock_{};
    Num now_{};
  };

  // An op posted by a rank and not yet paired with its partner.
  struct Posted {
    int rank = 0;
    std::size_t count = 0;
    Num bytes{};
    bool reduce = false;  // a recv_reduce
    Num at{};             // when it was posted
    std::uint32_t copies = 1;  // not yet paired
  };

  // Posted ops of one ordered rank pair (a -> b): all sends or all receives, oldest first.
  struct PairQueue {
    boost::container::small_vector<Posted, 1> waiting;  // mostly one op: inline, as a port's queue
    std::size_t head = 0;
    bool sends = false;
  };

  struct RankState {
    Num touched{};         // when an event last touched it (the clock's order check)
    std::size_t step = 0;  // index of the current (or next) step in the source
    Num start{};
    std::size_t pending = 0;  // messages of the current step not yet arrived
    Num last_arrival{};
    std::vector<std::pair<Num, Num>> reduces;  // (arrival, bytes) of the step's reduced blocks
    bool done = false;
    Num finish{};
  };

  enum class EventKind : std::uint8_t { arrival, step_end };

  struct Event {
    Num t{};
    std::uint64_t seq = 0;  // insertion order: equal times are handled first come, first served
    EventKind kind = EventKind::arrival;
    std::uint32_t id = 0;  // the message, rank or port
  };
  struct EventLater {
    bool operator()(const Event& x, const Event& y) const {
      return !Clock::quiet_equal(x.t, y.t) ? Clock::quiet_less(y.t, x.t) : x.seq > y.seq;
    }
  };

  // A rank's events must keep their order.
  void touch(RankState& st, const Num& t) {
    clock_.in_order(st.touched, t);
    st.touched = t;
  }

  void push(const Num& t, EventKind kind, std::uint32_t id) { events_.push(Event{t, seq_++, kind, id}); }

  void handle(const Event& ev) {
    switch (ev.kind) {
      case EventKind::arrival:
        arrive(messages_[ev.id], ev.t);  // a copy: arrive() may add messages
        free_.push_back(ev.id);          // its slot is taken by a later message
        return;
      case EventKind::step_end: end_step(static_cast<int>(ev.id), ev.t); return;
    }
  }

  // The next message leaves port p at time t.
  void leave_port(std::uint32_t p, const Num& t) {
    const std::uint32_t m = ports_[p].leave(clock_, t);
    reschedule(p);
    left_port(m, t);
  }

  // Starts rank r's next non-empty step at time t (or finishes the rank).
  void post(int r, const Num& t) {
    RankState& st = ranks_[static_cast<std::size_t>(r)];
    touch(st, t);
    const std::size_t steps = reader_.num_steps(r);
    std::vector<PricedOp<Num>>& mine = mine_;  // pairing reads no other step
    for (; st.step < steps; ++st.step) {
      reader_.ops(r, st.step, mine);
      if (fold_ != 0 && in_switch(r)) keep_first_gpus(mine);
      if (!mine.empty()) break;
    }
    if (half_ > 0) reverse_mirrored_receives(mine);
    if (st.step >= steps) {
      st.done = true;
      st.finish = t;
      return;
    }
    coalesce(mine);
    st.start = t;
    st.pending = 0;
    for (const PricedOp<Num>& op : mine) st.pending += op.copies;
    st.last_arrival = t;
    st.reduces.clear();
    for (const PricedOp<Num>& op : mine) pair(r, op, t);
  }

  // Folded, a switch posts its ops towards the hosts' first GPUs: the others are their turns.
  void keep_first_gpus(std::vector<PricedOp<Num>>& ops) const {
    std::erase_if(ops, [this](const PricedOp<Num>& op) { return local_[static_cast<std::size_t>(op.peer)] != 0; });
  }

  // Folds each op into the op before it to the same peer in the same direction when both have
  // one kind and one block size: per ordered pair of ranks the ops keep their order, as copies
  // (the top of the file). The other ops keep their places. The op before is looked for among
  // the last kCoalesceWindow kept ops (a server's step to thousands of peers stays linear); one
  // not found there is kept on its own, which prices the same.
  static constexpr std::size_t kCoalesceWindow = 64;
  void coalesce(std::vector<PricedOp<Num>>& ops) {
    if (ops.size() < 2 || !coalesce_copies_) return;
    std::size_t kept = 0;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const bool send = ops[i].kind == coll::OpKind::send;
      std::size_t last = kept;  // the latest kept op to the same peer in the same direction
      for (std::size_t j = kept; j-- > 0 && kept - j <= kCoalesceWindow;)
        if (ops[j].peer == ops[i].peer && (ops[j].kind == coll::OpKind::send) == send) {
          last = j;
          break;
        }
      if (last < kept && ops[last].kind == ops[i].kind && ops[last].count == ops[i].count &&
          Clock::same_size(ops[last].bytes, ops[i].bytes)) {
        ++ops[last].copies;
      } else {
        ops[kept++] = ops[i];
      }
    }
    ops.resize(kept);
  }

  // Pairs op of rank r with its partner (FIFO per ordered pair) and begins the message when
  // the partner has posted.
  void pair(int r, const PricedOp<Num>& op, const Num& t) {
    const bool send = op.kind == coll::OpKind::send;
    int from = send ? r : op.peer;
    int to = send ? op.peer : r;
    if (op.peer < 0 || op.peer >= static_cast<int>(ranks_.size()))
      throw Error("schedule '" + reader_.header().algorithm + "': rank " + std::to_string(r) + " names peer " +
                  std::to_string(op.peer) + ", not a rank");
    if (fold_ != 0 && !send) {
      // The receive is the turn of a message whose sender is its host's first rank.
      const int k = fold_ - local_[static_cast<std::size_t>(from)];
      from = turned(from, k % fold_);
      to = turned(to, k % fold_);
    } else if (half_ > 0 && !send && from >= half_) {
      // The receive is the mirror of a message whose sender is in the lower half.
      from = mirror_of(from);
      to = mirror_of(to);
    }
    PairQueue& q = pair_queue(from, to);
    Posted me{r, op.count, op.bytes, op.kind == coll::OpKind::recv_reduce, t, op.copies};
    // The waiting ops of the other side, oldest first, take as many of the copies as they hold.
    while (me.copies > 0 && q.head < q.waiting.size() && q.sends != send) {
      Posted& other = q.waiting[q.head];
      clock_.in_order(other.at, t);  // the waiting op was posted first
      if (other.count != me.count || !clock_.equal(other.bytes, me.bytes))
        throw Error("schedule '" + reader_.header().algorithm + "': a message from rank " + std::to_string(from) +
                    " to rank " + std::to_string(to) + " pairs blocks of " +
                    std::to_string(send ? me.count : other.count) + " and " +
                    std::to_string(send ? other.count : me.count) + " elements");
      const std::uint32_t copies = std::min(me.copies, other.copies);
      begin(from, to, me.bytes, send ? other.reduce : me.reduce, t, copies);
      me.copies -= copies;
      if ((other.copies -= copies) == 0) ++q.head;
    }
    if (me.copies == 0) return;
    if (q.head == q.waiting.size()) q.waiting.clear(), q.head = 0;
    q.sends = send;
    q.waiting.push_back(me);
  }

  // The queue of the ordered pair (from, to), created empty on first use. Most ranks talk to
  // few peers (a tree's parent and children, a ring's neighbours, lg p partners): their queues
  // are a short list searched in order. A rank with many (a parameter server, a switch that
  // reduces) indexes its list by receiver once it passes kShortList.
  static constexpr std::size_t kShortList = 16;
  // The list's room at its first queue: a tree's rank or a ring's meets its few peers with one
  // allocation, not one per doubling (16,384 ranks: 5-10% of a run).
  static constexpr std::size_t kFewPeers = 4;
  struct SenderQueues {
    std::vector<std::pair<int, PairQueue>> list;  // (receiver, queue), in order of first use
    std::unordered_map<int, std::size_t> index;   // receiver -> place in list, past kShortList
  };
  PairQueue& pair_queue(int from, int to) {
    SenderQueues& mine = pairs_[static_cast<std::size_t>(from)];
    if (mine.index.empty()) {
      for (auto& [peer, q] : mine.list)
        if (peer == to) return q;
    } else if (const auto it = mine.index.find(to); it != mine.index.end()) {
      return mine.list[it->second].second;
    }
    if (mine.list.empty()) mine.list.reserve(kFewPeers);
    mine.list.emplace_back(to, PairQueue{});
    if (mine.list.size() > kShortList) {
      if (mine.index.empty())
        for (std::size_t i = 0; i < mine.list.size(); ++i) mine.index.emplace(mine.list[i].first, i);
      else
        mine.index.emplace(to, mine.list.size() - 1);
    }
    return mine.list.back().second;
  }

  // Port of rank r: injection (sends) or ejection (receives), per level when they are separate.
  std::uint32_t port_of(int r, bool inject, bool inter) const {
    const std::size_t level = costs_.separate_level_ports && inter ? 1 : 0;
    return static_cast<std::uint32_t>(4 * static_cast<std::size_t>(r) + (inject ? 0 : 2) + level);
  }

  // Egress (out) or ingress port of host h: every inter-host message of the host shares it.
  std::uint32_t host_port(int h, bool out) const {
    return static_cast<std::uint32_t>(4 * ranks_.size() + 2 * static_cast<std::size_t>(h) + (out ? 0 : 1));
  }

  // The network's groups of hosts behind one trunk (LevelCosts::host_group).
  static std::size_t groups(const coll::LevelCosts& costs) {
    int n = 0;
    for (int g : costs.host_group) n = std::max(n, g + 1);
    return static_cast<std::size_t>(n);
  }
  // Egress (out) or ingress port of group g's trunk: every message between groups shares it.
  std::uint32_t group_port(int g, bool out) const {
    return static_cast<std::uint32_t>(4 * ranks_.size() + 2 * static_cast<std::size_t>(layout_.nhosts()) +
                                      2 * static_cast<std::size_t>(g) + (out ? 0 : 1));
  }

  // A switch helper's port towards (from) or from one peer: the switch's link to that GPU.
  std::uint32_t switch_port(int self, int peer, bool inject) {
    const std::uint64_t key = (static_cast<std::uint64_t>(self) << 33) | (static_cast<std::uint64_t>(peer) << 1) |
                              (inject ? 1U : 0U);
    const auto [it, added] = switch_ports_.emplace(key, static_cast<std::uint32_t>(ports_.size()));
    if (added) ports_.emplace_back(&clock_, &messages_), leaves_.grow(ports_.size());
    return it->second;
  }
  bool in_switch(int r) const {
    return costs_.switch_helpers && r >= reader_.header().nranks - reader_.header().helpers;
  }

  void begin(int from, int to, const Num& bytes, bool reduce, const Num& t, std::uint32_t copies) {
    const bool inter = layout_.host_of(from) != layout_.host_of(to);
    const double beta = inter ? costs_.beta_inter_us_per_byte : costs_.beta_intra_us_per_byte;
    Message m;
    m.from = from;
    m.to = to;
    m.bytes = bytes;
    m.alpha =
        inter ? coll::inter_alpha_us(costs_, layout_.host_of(from), layout_.host_of(to)) : costs_.alpha_intra_us;
    if (in_switch(from) || in_switch(to)) m.alpha = costs_.switch_alpha_us;  // one link to the switch
    m.reduce = reduce;
    m.copies = copies;
    m.left = t;
    m.number = begun_++;
    const std::uint32_t id = keep(m);
    const bool has_bytes = clock_.positive(bytes);
    // Folded, a host's NICs and its group's trunk carry the message's L turns.
    const std::uint32_t turns = fold_ == 0 ? 1 : static_cast<std::uint32_t>(fold_);
    if (has_bytes && beta > 0) {
      const Num work = m.bytes * beta;
      join(in_switch(from) ? switch_port(from, to, true) : port_of(state_of(from), true, inter), work, id, t);
      join(in_switch(to) ? switch_port(to, from, false) : port_of(state_of(to), false, inter), work, id, t);
    }
    if (has_bytes && inter && costs_.beta_host_us_per_byte > 0) {
      // A network switch's own ports are per link (switch_port), not a host's NICs.
      const Num host_work = m.bytes * costs_.beta_host_us_per_byte;
      // The ports of the hosts that stand for the ends (folded: the same hosts).
      if (!in_switch(from)) join(host_port(layout_.host_of(state_of(from)), true), host_work, id, t, turns);
      if (!in_switch(to)) join(host_port(layout_.host_of(state_of(to)), false), host_work, id, t, turns);
    }
    if (has_bytes && inter && costs_.beta_group_us_per_byte > 0 && !in_switch(from) && !in_switch(to)) {
      const int gf = costs_.host_group[static_cast<std::size_t>(layout_.host_of(from))];
      const int gt = costs_.host_group[static_cast<std::size_t>(layout_.host_of(to))];
      if (gf != gt) {  // the message crosses both groups' trunks, those that stand for them
        const Num group_work = m.bytes * costs_.beta_group_us_per_byte;
        const auto group_of = [&](int r) {
          return costs_.host_group[static_cast<std::size_t>(layout_.host_of(state_of(r)))];
        };
        join(group_port(group_of(from), true), group_work, id, t, turns);
        join(group_port(group_of(to), false), group_work, id, t, turns);
      }
    }
    if (messages_[id].ports_left == 0) push(t + m.alpha, EventKind::arrival, id);
  }

  // Stores a message begun now in a free slot (one left by an arrived message, else a new one):
  // the slots in use are the messages in flight, not every message of the schedule, so their
  // memory stays warm (on 512 ranks a quarter of a run was writing each message to fresh memory).
  std::uint32_t keep(const Message& m) {
    if (free_.empty()) {
      messages_.push_back(m);
      return static_cast<std::uint32_t>(messages_.size() - 1);
    }
    const std::uint32_t id = free_.back();
    free_.pop_back();
    messages_[id] = m;
    return id;
  }

  // `turns`: the message's turns that pass the port (folded runs: a host's NICs carry L).
  void join(std::uint32_t p, const Num& work, std::uint32_t message, const Num& t, std::uint32_t turns = 1) {
    ++messages_[message].ports_left;
    ports_[p].join(clock_, t, work, message, messages_[message].copies * turns);
    reschedule(p);
  }

  // Port p's next leave, after the set in service changed: its one entry in leaves_, with the
  // next insertion number, as if a fresh event replaced the old one.
  void reschedule(std::uint32_t p) {
    Port& port = ports_[p];
    if (port.idle()) {
      leaves_.erase(p);
    } else {
      leaves_.set(p, Event{port.next_leave(clock_), seq_++, EventKind::arrival, p});
    }
  }

  void left_port(std::uint32_t id, const Num& t) {
    Message& m = messages_[id];
    clock_.in_order(m.left, t);
    m.left = t;
    if (--m.ports_left == 0) push(t + m.alpha, EventKind::arrival, id);
  }

  // The message's sender and receiver (folded: the ranks that stand for them; one rank for a
  // message to its own turn, whose step holds both the send and the receive) see it arrive.
  void arrive(Message m, const Num& t) {
    for (const bool receiver : {false, true}) {
      const int r = state_of(receiver ? m.to : m.from);
      RankState& st = ranks_[static_cast<std::size_t>(r)];
      touch(st, t);
      st.last_arrival = max(st.last_arrival, t);
      // w copies of a block are reduced one after another from their common arrival, as w
      // blocks (the same sums, in the same order, as the ops one by one).
      if (receiver && m.reduce)
        for (std::uint32_t k = 0; k < m.copies; ++k) st.reduces.emplace_back(t, m.bytes);
      if ((st.pending -= m.copies) == 0) finish_step(r, t);
    }
  }

  // Every message of rank r's step has arrived at time t: combine the reduced blocks in arrival
  // order from the step's start, then end the step.
  void finish_step(int r, const Num& t) {
    RankState& st = ranks_[static_cast<std::size_t>(r)];
    std::sort(st.reduces.begin(), st.reduces.end(), [this](const auto& x, const auto& y) {
      if (clock_.less(x.first, y.first)) return true;
      if (clock_.less(y.first, x.first)) return false;
      return clock_.less(x.second, y.second);
    });
    Num free = st.start;
    const double gamma = in_switch(r) ? costs_.switch_gamma_us_per_byte : costs_.gamma_us_per_byte;
    for (const auto& [arrival, bytes] : st.reduces) free = max(free, arrival) + bytes * gamma;
    const Num end = max(st.last_arrival, free);
    if (clock_.less(t, end)) {
      push(end, EventKind::step_end, static_cast<std::uint32_t>(r));
    } else {
      end_step(r, t);
    }
  }

  void end_step(int r, const Num& t) {
    ++ranks_[static_cast<std::size_t>(r)].step;
    post(r, t);
  }

  Reader& reader_;
  Clock& clock_;
  const RankLayout& layout_;
  const coll::LevelCosts& costs_;
  bool coalesce_copies_ = true;
  bool fold_allowed_ = true;
  int fold_ = 0;            // L when folded (rotation_period), else 0
  int half_ = 0;            // p/2 when mirrored (mirror_holds), else 0
  std::vector<int> local_;  // folded: each rank's place on its host
  // The rank that stands for each rank (state_of): its host's first (a switch: itself) when
  // folded, min(r, p-1-r) when mirrored; empty when every rank runs.
  std::vector<int> stand_in_;
  std::vector<std::size_t> mirrored_at_;  // reverse_mirrored_receives' scratch
  std::vector<RankState> ranks_;
  std::vector<Port> ports_;
  std::vector<Message> messages_;       // by slot: messages in flight, and free slots
  std::vector<std::uint32_t> free_;     // slots of arrived messages, to be taken again
  std::uint64_t begun_ = 0;             // messages begun so far
  std::vector<SenderQueues> pairs_;  // by sender
  std::unordered_map<std::uint64_t, std::uint32_t> switch_ports_;  // (switch, peer, direction) -> port
  std::priority_queue<Event, std::vector<Event>, EventLater> events_;  // arrivals and step ends
  PortLeaves<Event, EventLater> leaves_{ports_.size()};  // each busy port's next leave
  std::uint64_t seq_ = 0;
  std::vector<PricedOp<Num>> mine_;  // the ops of the step being posted
};

}  // namespace colltune::sim::detail

#pragma once
// The event simulator's bandwidth sharing: max-min fair rates by progressive filling, kept from
// one instant to the next and re-solved only where a change can reach.
// event_sim_rates.cpp: the engine's side, the full solve of the components of changed links.
// event_sim_recall.cpp: full solutions remembered by their multiset of paths.
// event_sim_solver.cpp: the incremental solve (its top comment says why it is exact).
// The solver's per-flow state lives in FlowState::solve, its per-link state in LinkState::solve
// (what component searches read, next to the flows) and in RateSolver::ls_.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace colltune::sim::detail {

struct LinkState;
struct FlowState;

// When a link's turn came in progressive filling (its "pop"). Links are taken by least (share,
// link): a regular pop is (share, link, 0). Rounding can push a link's share below the last
// regular pop; such a link is taken right after it, in its "cascade": it is stamped with that
// pop's (level, root) and its rank `sub` >= 1 in the cascade. Lexicographic order is pop order.
struct PopTime {
  double level = std::numeric_limits<double>::infinity();  // +inf: does not pop
  std::uint32_t root = 0;
  std::uint32_t sub = 0;
};

inline bool operator<(const PopTime& a, const PopTime& b) {
  if (a.level != b.level) return a.level < b.level;
  return a.root != b.root ? a.root < b.root : a.sub < b.sub;
}
inline bool operator==(const PopTime& a, const PopTime& b) {
  return a.level == b.level && a.root == b.root && a.sub == b.sub;
}

// Where a link's pop in the current solution is: in LinkSolve::stored, or (links that carry one
// flow) at (its capacity, it, 0), or nowhere (it does not pop).
enum class PopKind : std::uint8_t { kStored, kAtCapacity, kNever };

// The solver's part of a link that its searches read (LinkState::solve, next to its flows).
struct LinkTag {
  std::uint32_t epoch = 0;           // == the solver's epoch: re-solved now (explicit / in the component)
  std::uint16_t component = 0;       // links in its component at its last full solve (0: none; saturates)
  PopKind pop = PopKind::kStored;    // where its pop is (RateSolver::pop)
};

// The rest of the solver's state of a link (RateSolver::ls_).
struct LinkSolve {
  PopTime stored;                    // its pop in the current solution, if PopKind::kStored
  std::uint32_t unfrozen = 0;        // flows on it whose rate is not fixed yet
  double remaining = 0;              // capacity not yet given to fixed flows
  double key = 0;                    // share its live entry in line was pushed with
  PopTime new_time;                  // its pop in the solve in progress
  std::uint32_t version = 0;         // invalidates stale entries in line
  bool in_cascade = false;           // its live entry is in the cascade being replayed
  bool ghost_queued = false;         // its recorded pop is queued as a ghost event
};

// The solver's part of a flow (FlowState::solve).
struct FlowSolve {
  static constexpr std::uint32_t kNew = 0xffffffffu;
  double rate = 0;                   // its rate in the current solution
  std::uint32_t by = kNew;           // the link whose pop fixed it (kNew: not solved yet)
  std::uint32_t new_by = kNew;       // the same, in the solve in progress
  double new_rate = 0;
  std::uint32_t epoch = 0;           // == the solver's epoch: fixed now (full solve: in the component)
};

class RateSolver {
 public:
  struct Rate {
    std::uint32_t flow;
    double rate;
  };
  // New max-min rates once the flows `added` are on their links and flows have left the links
  // `dirty` (already applied to `links`): the flows whose rate changed, new flows included.
  const std::vector<Rate>& solve(std::vector<LinkState>& links, std::vector<FlowState>& flows,
                                 const std::vector<std::uint32_t>& added, const std::vector<std::size_t>& dirty);

  // How the solves of shared links were answered so far (EventSimResult reports them).
  struct Counts {
    std::size_t incremental = 0;  // replayed incrementally
    std::size_t recalled = 0;     // a remembered solution
    std::size_t filled = 0;       // progressive filling
  };
  const Counts& counts() const { return counts_; }

 private:
  static constexpr std::uint32_t kNone = FlowSolve::kNew;
  static constexpr std::uint32_t kBudgetDivisor = 4;     // incremental: at most this part of the component
  static constexpr std::uint32_t kCascade = 0x3fffffffu;  // PopTime::sub of a cascade's next pop
  enum Kind : std::uint32_t { kPop, kGhost, kWatch };    // events of the incremental solve
  struct Entry {  // an event at PopTime (level, order >> 32, (order >> 2) & kCascade)
    double level = 0;
    std::uint64_t order = 0;  // root << 32 | sub << 2 | kind
    std::uint32_t link = 0;
    std::uint32_t version = 0;
    bool operator>(const Entry& o) const {
      if (level != o.level) return level > o.level;
      return order != o.order ? order > o.order : link > o.link;
    }
  };
  struct Share {  // a link in line by least (share, link)
    double share = 0;
    std::uint32_t link = 0;
    std::uint32_t version = 0;
    bool operator>(const Share& o) const { return share != o.share ? share > o.share : link > o.link; }
  };
  struct Sub {  // a share taken off a link, and when
    PopTime t;
    double rate;
  };
  struct LinkMarks {  // the incremental solve's, per link
    std::uint32_t watched = 0;       // == epoch_: its recorded pop is queued as a watch event
    std::uint32_t exploded = 0;      // == epoch_: its cascade is replayed (as its root)
    std::uint64_t made = 0;          // the event during which it was made explicit
    std::uint64_t seen = 0;          // cascade search mark
    std::uint32_t cascade_next = 0;  // then: the sub of the cascade's next pop
  };

  LinkTag& tag(std::size_t l);  // event_sim_engine.hpp
  const LinkTag& tag(std::size_t l) const;
  LinkSolve& ls(std::size_t l) { return ls_[l]; }
  const LinkSolve& ls(std::size_t l) const { return ls_[l]; }
  FlowSolve& fs(std::uint32_t f);
  const FlowSolve& fs(std::uint32_t f) const;
  PopTime pop(std::size_t l) const;  // its pop in the current solution
  void set_pop(std::size_t l, const PopTime& t) {
    tag(l).pop = PopKind::kStored;
    ls(l).stored = t;
  }
  void next_epoch();
  bool is_explicit(std::size_t l) const { return tag(l).epoch == epoch_; }
  bool is_fixed(std::uint32_t f) const { return fs(f).epoch == epoch_; }

  // event_sim_rates.cpp
  bool solve_alone(std::uint32_t f);
  std::uint32_t bottleneck(std::uint32_t f) const;
  bool incremental_pays();
  void settle(std::uint32_t f, double rate, std::uint32_t by);
  void commit();
  void solve_full();
  bool find_component();
  void solve_unshared();
  void fill_component();
  void fill_pop(std::uint32_t l, double share, PopTime& level);
  void push_share(const Share& e);

  // event_sim_solver.cpp: the incremental solve; false when it gave up (see there).
  bool solve_incremental();
  void make_explicit(std::uint32_t l, const PopTime& now);
  bool fixed_before(std::uint32_t f, const PopTime& now) const;
  void pop_link(const Entry& e);
  void pop_cascade();
  void pop_at(std::uint32_t l, const PopTime& now, double share);
  void fix_flows(std::uint32_t l, const PopTime& now, double share);
  void take(std::uint32_t l, double share, const PopTime& now);
  void queue(std::uint32_t l, double share, const PopTime& now);
  void queue_ghost(std::uint32_t l, const PopTime& expected, const PopTime& now);
  void join_cascade(std::uint32_t l, double share, const PopTime& now);
  void explode(const PopTime& now);
  void ghost(std::uint32_t l);
  void watched_pop(std::uint32_t l);
  void push(const PopTime& t, Kind kind, std::uint32_t link, std::uint32_t version);

  // event_sim_recall.cpp: progressive filling reads only the component's links and its flows'
  // paths, so an equal multiset of channels (one path each) gets an equal solution, bit for bit.
  struct Solved {
    std::vector<std::uint32_t> chans;   // distinct channels
    std::vector<std::uint32_t> counts;  // flows on each
    std::vector<double> rates;          // each one's rate
    std::vector<std::uint32_t> by;      // the link whose pop fixes its flows: it pops (regular: at (rate, by, 0))
    std::vector<std::pair<std::uint32_t, PopTime>> cascade;  // the links that pop in cascades, and when
  };
  bool recall();
  void remember();

  std::vector<LinkState>* links_ = nullptr;
  std::vector<FlowState>* flows_ = nullptr;
  std::uint32_t epoch_ = 0;              // one per solve (and one to mark the changed links)
  std::vector<std::uint32_t> shared_;    // new flows not alone on their links
  std::vector<std::uint32_t> changed_;   // links whose set of flows changed
  std::vector<std::uint32_t> touched_;   // links re-solved (explicit / in the component)
  std::vector<std::uint32_t> fixed_;     // flows re-solved
  std::vector<Rate> out_;
  Counts counts_;
  std::vector<std::uint32_t> stack_;     // search scratch
  // full solve
  std::vector<Share> sorted_;            // initial shares in order
  std::vector<Share> shares_;            // shares pushed since (heap)
  std::vector<LinkSolve> ls_;            // per link
  // incremental solve
  std::vector<LinkMarks> marks_;
  std::vector<Entry> heap_;              // events
  std::vector<Share> cascade_;           // the cascade being replayed: its links in line (heap)
  PopTime cascade_at_;                   // its (level, root, kCascade)
  bool cascade_queued_ = false;          // its next pop is in heap_
  std::vector<Sub> subs_;
  std::size_t budget_ = 0;               // links it may make explicit
  std::uint32_t backoff_ = 0;            // after it gave up: eligible solves to skip (doubles)
  std::uint32_t skip_ = 0;               // eligible solves still to skip
  static constexpr std::uint32_t kMaxBackoff = 63;
  std::uint64_t event_ = 0;              // events taken
  std::uint64_t seen_ = 0;               // cascade searches
  std::uint32_t clean_pop_ = kNone;      // the recorded pop being replayed (watch event)
  bool in_ghost_ = false;
  bool failed_ = false;
  // recall
  std::vector<std::uint32_t> chan_count_;  // per channel, flows of the component (scratch, kept 0)
  std::vector<std::uint32_t> chan_index_;  // per channel scratch: its index in a Solved
  std::vector<std::uint32_t> comp_chans_;
  std::uint64_t comp_hash_ = 0;
  std::vector<Solved> solved_;
  std::unordered_multimap<std::uint64_t, std::uint32_t> solved_index_;
  std::size_t solved_size_ = 0;          // entries stored over all of solved_
};

}  // namespace colltune::sim::detail

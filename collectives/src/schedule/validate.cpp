// validate(): checks a Schedule against the semantics stated in schedule.hpp.
//
// 1. Structure: ranks, peers, blocks and owned blocks in range.
// 2. Matching: per ordered pair (a, b) the k-th send a->b pairs with the k-th receive at b from
//    a, with equal element counts.
// 3. Progress: a rendezvous simulation. Every rank posts its current step; a step completes when
//    the partner of each of its operations has posted the matching step. Ranks left unfinished
//    when nothing can move are deadlocked.
// 4. Symbolic result: while simulating, each rank's buffer is a list of element intervals, each
//    with the set of ranks whose input it contains (a bitset; no set = undefined content).
//    Sends capture the sender's intervals when its step is posted; receives land when the step
//    completes. recv_reduce must join disjoint sets, recv_copy replaces. Cost is per interval,
//    not per element, so 2^20-element schedules are cheap.
#include <deque>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "colltune/collectives/schedule.hpp"
#include "colltune/common/error.hpp"

namespace colltune::coll {
namespace {

using Bits = std::vector<std::uint64_t>;
using SetPtr = std::shared_ptr<const Bits>;

struct Piece {
  std::size_t begin = 0;
  std::size_t end = 0;
  SetPtr set;  // null: undefined content
};

std::string op_name(const Op& op) {
  std::ostringstream os;
  switch (op.kind) {
    case OpKind::send: os << "send to "; break;
    case OpKind::recv_reduce: os << "recv_reduce from "; break;
    case OpKind::recv_copy: os << "recv_copy from "; break;
  }
  os << op.peer << " [" << op.block.offset << "," << op.block.end() << ")";
  return os.str();
}

std::string where(int rank, std::size_t step, std::size_t op, const Op& o) {
  return "rank " + std::to_string(rank) + " step " + std::to_string(step) + " op " + std::to_string(op) + " (" +
         op_name(o) + ")";
}

[[noreturn]] void fail(const Schedule& s, const std::string& what) {
  throw Error("schedule '" + s.algorithm + "' (" + std::string(to_string(s.collective)) + ", " +
              std::to_string(s.nranks) + " ranks, " + std::to_string(s.count) + " elements): " + what);
}

bool in_range(const Block& b, std::size_t count) { return b.offset <= count && b.count <= count - b.offset; }

void check_structure(const Schedule& s) {
  if (s.nranks <= 0) fail(s, "needs at least one rank");
  if (s.ranks.size() != static_cast<std::size_t>(s.nranks)) {
    fail(s, "has step lists for " + std::to_string(s.ranks.size()) + " ranks");
  }
  if (s.helpers < 0 || s.helpers >= s.nranks) {
    fail(s, "has " + std::to_string(s.helpers) + " helpers, expected 0.." + std::to_string(s.nranks - 1));
  }
  if (s.collective != Collective::allreduce) {
    if (s.owned.size() != static_cast<std::size_t>(s.data_ranks())) {
      fail(s, "owned has " + std::to_string(s.owned.size()) + " blocks, expected one per data rank");
    }
    for (std::size_t r = 0; r < s.owned.size(); ++r) {
      if (!in_range(s.owned[r], s.count)) fail(s, "owned block of rank " + std::to_string(r) + " is out of range");
    }
  }
  for (int r = 0; r < s.nranks; ++r) {
    const auto& steps = s.steps(r);
    for (std::size_t i = 0; i < steps.size(); ++i) {
      for (std::size_t k = 0; k < steps[i].ops.size(); ++k) {
        const Op& op = steps[i].ops[k];
        if (op.peer < 0 || op.peer >= s.nranks) fail(s, where(r, i, k, op) + ": peer out of range");
        if (op.peer == r) fail(s, where(r, i, k, op) + ": peer is the rank itself");
        if (!in_range(op.block, s.count)) fail(s, where(r, i, k, op) + ": block outside [0,count)");
      }
    }
  }
}

struct OpRef {
  int rank = 0;
  std::size_t step = 0;
  std::size_t op = 0;
};

// partner[r][step][op] = the matching operation at the peer.
using Partners = std::vector<std::vector<std::vector<OpRef>>>;

Partners match_ops(const Schedule& s) {
  const auto p = static_cast<std::int64_t>(s.nranks);
  std::unordered_map<std::int64_t, std::vector<OpRef>> sends;
  std::unordered_map<std::int64_t, std::vector<OpRef>> recvs;
  Partners partner(s.ranks.size());
  for (int r = 0; r < s.nranks; ++r) {
    const auto& steps = s.steps(r);
    partner[static_cast<std::size_t>(r)].resize(steps.size());
    for (std::size_t i = 0; i < steps.size(); ++i) {
      partner[static_cast<std::size_t>(r)][i].resize(steps[i].ops.size());
      for (std::size_t k = 0; k < steps[i].ops.size(); ++k) {
        const Op& op = steps[i].ops[k];
        if (op.kind == OpKind::send) sends[r * p + op.peer].push_back({r, i, k});
        else recvs[op.peer * p + r].push_back({r, i, k});
      }
    }
  }
  auto op_at = [&](const OpRef& x) -> const Op& { return s.steps(x.rank)[x.step].ops[x.op]; };
  auto check_pair = [&](const std::vector<OpRef>& mine, const std::vector<OpRef>* theirs, bool is_send) {
    const std::size_t n = theirs ? theirs->size() : 0;
    if (mine.size() > n) {
      const OpRef& x = mine[n];
      fail(s, where(x.rank, x.step, x.op, op_at(x)) + ": no matching " + (is_send ? "receive" : "send") +
                  " (" + std::to_string(mine.size()) + " posted, " + std::to_string(n) + " on the other side)");
    }
  };
  for (const auto& [key, list] : sends) {
    auto it = recvs.find(key);
    check_pair(list, it == recvs.end() ? nullptr : &it->second, true);
  }
  for (const auto& [key, list] : recvs) {
    auto it = sends.find(key);
    check_pair(list, it == sends.end() ? nullptr : &it->second, false);
    for (std::size_t k = 0; k < list.size(); ++k) {
      const OpRef& rv = list[k];
      const OpRef& sd = it->second[k];
      if (op_at(rv).block.count != op_at(sd).block.count) {
        fail(s, where(sd.rank, sd.step, sd.op, op_at(sd)) + " pairs with " + where(rv.rank, rv.step, rv.op, op_at(rv)) +
                    ": element counts differ");
      }
      if (op_at(rv).channel != op_at(sd).channel) {
        fail(s, where(sd.rank, sd.step, sd.op, op_at(sd)) + " pairs with " + where(rv.rank, rv.step, rv.op, op_at(rv)) +
                    ": channels differ (" + std::to_string(op_at(sd).channel) + " and " +
                    std::to_string(op_at(rv).channel) + ")");
      }
      partner[static_cast<std::size_t>(rv.rank)][rv.step][rv.op] = sd;
      partner[static_cast<std::size_t>(sd.rank)][sd.step][sd.op] = rv;
    }
  }
  return partner;
}

// A rank's buffer as intervals [begin, end) -> contributor set, covering [0, count).
class Intervals {
 public:
  Intervals(std::size_t count, SetPtr initial) {
    if (count > 0) map_[0] = Piece{0, count, std::move(initial)};
  }
  void set(const Block& b, SetPtr v) {
    if (b.count == 0) return;
    split(b.offset);
    split(b.end());
    map_.erase(map_.lower_bound(b.offset), map_.lower_bound(b.end()));
    map_[b.offset] = Piece{b.offset, b.end(), std::move(v)};
  }
  // Pieces of block b, with positions relative to b.offset.
  std::vector<Piece> slice(const Block& b) {
    std::vector<Piece> out;
    if (b.count == 0) return out;
    split(b.offset);
    split(b.end());
    for (auto it = map_.lower_bound(b.offset); it != map_.end() && it->first < b.end(); ++it) {
      out.push_back(Piece{it->second.begin - b.offset, it->second.end - b.offset, it->second.set});
    }
    return out;
  }
  const std::map<std::size_t, Piece>& pieces() const { return map_; }
  void compact() {
    for (auto it = map_.begin(); it != map_.end();) {
      auto next = std::next(it);
      if (next != map_.end() && same(it->second.set, next->second.set)) {
        it->second.end = next->second.end;
        map_.erase(next);
      } else {
        it = next;
      }
    }
  }

 private:
  static bool same(const SetPtr& a, const SetPtr& b) {
    if (a == b) return true;
    return a && b && *a == *b;
  }
  void split(std::size_t at) {
    auto it = map_.upper_bound(at);
    if (it == map_.begin()) return;
    --it;
    Piece& pc = it->second;
    if (pc.begin == at || pc.end <= at) return;
    Piece right{at, pc.end, pc.set};
    pc.end = at;
    map_[at] = right;
  }
  std::map<std::size_t, Piece> map_;
};

SetPtr singleton(int rank, std::size_t words) {
  auto b = std::make_shared<Bits>(words, 0);
  (*b)[static_cast<std::size_t>(rank) / 64] |= std::uint64_t{1} << (static_cast<unsigned>(rank) % 64);
  return b;
}

// First rank in both sets, or -1.
int first_common(const Bits& a, const Bits& b) {
  for (std::size_t w = 0; w < a.size(); ++w) {
    const std::uint64_t x = a[w] & b[w];
    if (x != 0) return static_cast<int>(w * 64 + static_cast<std::size_t>(__builtin_ctzll(x)));
  }
  return -1;
}

std::string describe(const SetPtr& set, int nranks) {
  if (!set) return "undefined content";
  std::string out = "contributions of {";
  int shown = 0;
  for (int r = 0; r < nranks; ++r) {
    if (((*set)[static_cast<std::size_t>(r) / 64] >> (r % 64)) & 1U) {
      if (shown == 8) { out += ",..."; break; }
      if (shown++) out += ',';
      out += std::to_string(r);
    }
  }
  return out + "}";
}

struct Simulation {
  const Schedule& s;
  const Partners& partner;
  std::size_t words;
  std::vector<Intervals> state;
  std::vector<std::size_t> cur;  // step each rank has posted
  std::unordered_map<std::int64_t, std::deque<std::vector<Piece>>> channel;

  Simulation(const Schedule& sched, const Partners& part)
      : s(sched), partner(part), words((static_cast<std::size_t>(sched.nranks) + 63) / 64),
        cur(static_cast<std::size_t>(sched.nranks), 0) {
    for (int r = 0; r < s.nranks; ++r) {
      // A helper starts undefined (its input does not count); so does an allgather rank
      // outside its owned block.
      if (s.is_helper(r)) {
        state.emplace_back(s.count, nullptr);
        continue;
      }
      const bool gather = s.collective == Collective::allgather;
      state.emplace_back(s.count, gather ? nullptr : singleton(r, words));
      if (gather) state.back().set(s.owned[static_cast<std::size_t>(r)], singleton(r, words));
    }
  }
  std::int64_t key(int from, int to) const { return static_cast<std::int64_t>(from) * s.nranks + to; }

  void post(int r) {
    const auto& steps = s.steps(r);
    const std::size_t i = cur[static_cast<std::size_t>(r)];
    if (i >= steps.size()) return;
    for (const Op& op : steps[i].ops) {
      if (op.kind == OpKind::send) channel[key(r, op.peer)].push_back(state[static_cast<std::size_t>(r)].slice(op.block));
    }
  }
  bool ready(int r) const {
    const std::size_t i = cur[static_cast<std::size_t>(r)];
    const auto& refs = partner[static_cast<std::size_t>(r)][i];
    for (const OpRef& x : refs) {
      if (cur[static_cast<std::size_t>(x.rank)] < x.step) return false;
    }
    return true;
  }
  void land(int r, std::size_t step, std::size_t k, const Op& op) {
    auto& q = channel[key(op.peer, r)];
    std::vector<Piece> msg = std::move(q.front());
    q.pop_front();
    Intervals& st = state[static_cast<std::size_t>(r)];
    for (const Piece& pc : msg) {
      const Block dst{op.block.offset + pc.begin, pc.end - pc.begin};
      if (op.kind == OpKind::recv_copy) { st.set(dst, pc.set); continue; }
      for (const Piece& mine : st.slice(dst)) {
        const Block part{dst.offset + mine.begin, mine.end - mine.begin};
        const std::string at = where(r, step, k, op) + ": elements [" + std::to_string(part.offset) + "," +
                               std::to_string(part.end()) + ")";
        if (!pc.set || !mine.set) fail(s, at + " reduce " + (pc.set ? "into" : "with") + " undefined content");
        const int twice = first_common(*mine.set, *pc.set);
        if (twice >= 0) fail(s, at + " would count rank " + std::to_string(twice) + "'s contribution twice");
        auto joined = std::make_shared<Bits>(*mine.set);
        for (std::size_t w = 0; w < joined->size(); ++w) (*joined)[w] |= (*pc.set)[w];
        st.set(part, std::move(joined));
      }
    }
  }
  void complete(int r) {
    const std::size_t i = cur[static_cast<std::size_t>(r)];
    const auto& ops = s.steps(r)[i].ops;
    for (std::size_t k = 0; k < ops.size(); ++k) {
      if (ops[k].kind != OpKind::send) land(r, i, k, ops[k]);
    }
    state[static_cast<std::size_t>(r)].compact();
    ++cur[static_cast<std::size_t>(r)];
    post(r);
  }
  void run();
  void report_deadlock() const;
  void check_result() const;
};

void Simulation::run() {
  for (int r = 0; r < s.nranks; ++r) post(r);
  std::deque<int> work;
  for (int r = 0; r < s.nranks; ++r) work.push_back(r);
  while (!work.empty()) {
    const int r = work.front();
    work.pop_front();
    while (cur[static_cast<std::size_t>(r)] < s.steps(r).size() && ready(r)) {
      const auto& done = s.steps(r)[cur[static_cast<std::size_t>(r)]].ops;
      complete(r);
      for (const Op& op : done) work.push_back(op.peer);
      if (cur[static_cast<std::size_t>(r)] < s.steps(r).size()) {
        for (const Op& op : s.steps(r)[cur[static_cast<std::size_t>(r)]].ops) work.push_back(op.peer);
      }
    }
  }
}

void Simulation::report_deadlock() const {
  for (int r = 0; r < s.nranks; ++r) {
    const std::size_t i = cur[static_cast<std::size_t>(r)];
    if (i >= s.steps(r).size()) continue;
    const auto& refs = partner[static_cast<std::size_t>(r)][i];
    for (std::size_t k = 0; k < refs.size(); ++k) {
      const OpRef& x = refs[k];
      if (cur[static_cast<std::size_t>(x.rank)] < x.step) {
        fail(s, "deadlock: " + where(r, i, k, s.steps(r)[i].ops[k]) + " waits for rank " + std::to_string(x.rank) +
                    " step " + std::to_string(x.step) + ", but that rank is stuck at step " +
                    std::to_string(cur[static_cast<std::size_t>(x.rank)]));
      }
    }
  }
}

void Simulation::check_result() const {
  auto all = std::make_shared<Bits>(words, 0);
  for (int r = 0; r < s.data_ranks(); ++r) (*all)[static_cast<std::size_t>(r) / 64] |= std::uint64_t{1} << (r % 64);
  for (int r = 0; r < s.data_ranks(); ++r) {  // helpers end with anything
    Intervals st = state[static_cast<std::size_t>(r)];
    auto expect = [&](const Block& b, const SetPtr& want, const std::string& what) {
      for (const Piece& pc : st.slice(b)) {
        if (pc.set && *pc.set == *want) continue;
        fail(s, "rank " + std::to_string(r) + " ends with elements [" + std::to_string(b.offset + pc.begin) + "," +
                    std::to_string(b.offset + pc.end) + ") holding " + describe(pc.set, s.nranks) + ", expected " +
                    what);
      }
    };
    switch (s.collective) {
      case Collective::allreduce: expect(Block{0, s.count}, all, "all ranks"); break;
      case Collective::reduce_scatter: expect(s.owned[static_cast<std::size_t>(r)], all, "all ranks"); break;
      case Collective::allgather:
        for (int q = 0; q < s.data_ranks(); ++q) {
          expect(s.owned[static_cast<std::size_t>(q)], singleton(q, words), "rank " + std::to_string(q) + "'s block");
        }
        break;
    }
  }
}

}  // namespace

void validate(const Schedule& schedule) {
  check_structure(schedule);
  const Partners partner = match_ops(schedule);
  Simulation sim(schedule, partner);
  sim.run();
  sim.report_deadlock();
  sim.check_result();
}

}  // namespace colltune::coll

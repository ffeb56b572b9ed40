// Reference interpreter for the schedule tests: a sequential data executor. It follows
// schedule.hpp: a rank posts its current step; the step completes when every partner operation
// has been posted; sends read the buffer as the step was posted; receives
// land when the step completes.
#include "reference.hpp"

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>

namespace colltune::test {
namespace {

using coll::Op;
using coll::OpKind;
using coll::Schedule;

struct Ref {
  int rank;
  std::size_t step;
  std::size_t op = 0;  // index of the op in its step
};

// partner[r][s][k]: rank and step of the op matching op k of step s of rank r.
std::vector<std::vector<std::vector<Ref>>> partners(const Schedule& s) {
  std::map<std::pair<int, int>, std::vector<Ref>> sends, recvs;
  std::vector<std::vector<std::vector<Ref>>> out(s.ranks.size());
  for (int r = 0; r < s.nranks; ++r) {
    out[static_cast<std::size_t>(r)].resize(s.steps(r).size());
    for (std::size_t i = 0; i < s.steps(r).size(); ++i) {
      out[static_cast<std::size_t>(r)][i].resize(s.steps(r)[i].ops.size());
      for (std::size_t k = 0; k < s.steps(r)[i].ops.size(); ++k) {
        const Op& op = s.steps(r)[i].ops[k];
        if (op.kind == OpKind::send) sends[{r, op.peer}].push_back({r, i, k});
        else recvs[{op.peer, r}].push_back({r, i, k});
      }
    }
  }
  std::map<std::pair<int, int>, std::size_t> next_send, next_recv;
  for (int r = 0; r < s.nranks; ++r) {
    for (std::size_t i = 0; i < s.steps(r).size(); ++i) {
      const auto& ops = s.steps(r)[i].ops;
      for (std::size_t k = 0; k < ops.size(); ++k) {
        if (ops[k].kind == OpKind::send) out[static_cast<std::size_t>(r)][i][k] = recvs.at({r, ops[k].peer})[next_send[{r, ops[k].peer}]++];
        else out[static_cast<std::size_t>(r)][i][k] = sends.at({ops[k].peer, r})[next_recv[{ops[k].peer, r}]++];
      }
    }
  }
  return out;
}

// Drives the rendezvous progress rule: post(r) when rank r posts a step, complete(r) when it
// completes (every partner op has been posted). Throws on deadlock.
void drive(const Schedule& s, const std::function<void(int)>& post, const std::function<void(int)>& complete,
           std::vector<std::size_t>& cur) {
  const auto part = partners(s);
  cur.assign(static_cast<std::size_t>(s.nranks), 0);
  auto posted = [&](const Ref& x) { return cur[static_cast<std::size_t>(x.rank)] >= x.step; };
  auto ready = [&](int r, std::size_t i) {
    const auto& mine = part[static_cast<std::size_t>(r)][i];
    return std::all_of(mine.begin(), mine.end(), posted);
  };
  for (int r = 0; r < s.nranks; ++r) post(r);
  bool moved = true;
  while (moved) {
    moved = false;
    for (int r = 0; r < s.nranks; ++r) {
      auto& i = cur[static_cast<std::size_t>(r)];
      while (i < s.steps(r).size() && ready(r, i)) {
        complete(r);
        ++i;
        post(r);
        moved = true;
      }
    }
  }
  for (int r = 0; r < s.nranks; ++r) {
    if (cur[static_cast<std::size_t>(r)] < s.steps(r).size()) throw std::runtime_error("reference: deadlock");
  }
}

}  // namespace

std::int64_t input_value(int rank, std::size_t i) {
  return static_cast<std::int64_t>((static_cast<std::size_t>(rank) * 7919 + i * 31) % 1000) - 300;
}

std::vector<std::vector<std::int64_t>> run_data(const Schedule& s) {
  const auto p = static_cast<std::size_t>(s.nranks);
  std::vector<std::vector<std::int64_t>> buf(p, std::vector<std::int64_t>(s.count, -7777));
  for (std::size_t r = 0; r < static_cast<std::size_t>(s.data_ranks()); ++r) {  // helpers start with garbage
    const bool gather = s.collective == coll::Collective::allgather;
    const coll::Block mine = gather ? s.owned[r] : coll::Block{0, s.count};
    for (std::size_t i = mine.offset; i < mine.end(); ++i) buf[r][i] = input_value(static_cast<int>(r), i);
  }
  std::map<std::pair<int, int>, std::deque<std::vector<std::int64_t>>> wire;
  std::vector<std::size_t> cur;
  auto post = [&](int r) {
    if (cur[static_cast<std::size_t>(r)] >= s.steps(r).size()) return;
    for (const Op& op : s.steps(r)[cur[static_cast<std::size_t>(r)]].ops) {
      if (op.kind != OpKind::send) continue;
      const auto& b = buf[static_cast<std::size_t>(r)];
      wire[{r, op.peer}].emplace_back(b.begin() + static_cast<std::ptrdiff_t>(op.block.offset),
                                      b.begin() + static_cast<std::ptrdiff_t>(op.block.end()));
    }
  };
  auto complete = [&](int r) {
    for (const Op& op : s.steps(r)[cur[static_cast<std::size_t>(r)]].ops) {
      if (op.kind == OpKind::send) continue;
      auto& q = wire[{op.peer, r}];
      const std::vector<std::int64_t> msg = std::move(q.front());
      q.pop_front();
      auto& b = buf[static_cast<std::size_t>(r)];
      for (std::size_t i = 0; i < msg.size(); ++i) {
        auto& x = b[op.block.offset + i];
        x = op.kind == OpKind::recv_reduce ? x + msg[i] : msg[i];
      }
    }
  };
  drive(s, post, complete, cur);
  return buf;
}

std::string check_data(const Schedule& s, const std::vector<std::vector<std::int64_t>>& bufs) {
  for (int r = 0; r < s.data_ranks(); ++r) {  // helpers' buffers are not checked
    auto expect_sum = [&](const coll::Block& b) -> std::string {
      for (std::size_t i = b.offset; i < b.end(); ++i) {
        std::int64_t want = 0;
        for (int q = 0; q < s.data_ranks(); ++q) want += input_value(q, i);
        if (bufs[static_cast<std::size_t>(r)][i] != want) return "rank " + std::to_string(r) + " element " + std::to_string(i);
      }
      return "";
    };
    std::string bad;
    switch (s.collective) {
      case coll::Collective::allreduce: bad = expect_sum({0, s.count}); break;
      case coll::Collective::reduce_scatter: bad = expect_sum(s.owned[static_cast<std::size_t>(r)]); break;
      case coll::Collective::allgather:
        for (int q = 0; q < s.data_ranks() && bad.empty(); ++q) {
          const auto& b = s.owned[static_cast<std::size_t>(q)];
          for (std::size_t i = b.offset; i < b.end(); ++i) {
            if (bufs[static_cast<std::size_t>(r)][i] != input_value(q, i)) {
              bad = "rank " + std::to_string(r) + " element " + std::to_string(i);
              break;
            }
          }
        }
        break;
    }
    if (!bad.empty()) return bad;
  }
  return "";
}

}  // namespace colltune::test

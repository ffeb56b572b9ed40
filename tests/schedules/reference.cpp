// Reference interpreters for the schedule tests: a sequential data executor and a pricer.
// Both follow schedule.hpp: a rank posts its current step; the step completes when every
// partner operation has been posted; sends read the buffer as the step was posted; receives
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
// completes. Throws on deadlock. With `settled`, a step completes first only once every partner
// step is settled too (all of its own partners have posted), so the pricer knows when every
// message sharing a port with this step's messages began; if no step can complete that way,
// one completes under the plain rule.
void drive(const Schedule& s, const std::function<void(int)>& post, const std::function<void(int)>& complete,
           std::vector<std::size_t>& cur, bool settled = false) {
  const auto part = partners(s);
  cur.assign(static_cast<std::size_t>(s.nranks), 0);
  auto posted = [&](const Ref& x) { return cur[static_cast<std::size_t>(x.rank)] >= x.step; };
  auto ready = [&](int r, std::size_t i, bool strict) {
    for (const Ref& x : part[static_cast<std::size_t>(r)][i]) {
      if (!posted(x)) return false;
      if (!strict) continue;
      const auto& theirs = part[static_cast<std::size_t>(x.rank)][x.step];
      if (!std::all_of(theirs.begin(), theirs.end(), posted)) return false;
    }
    return true;
  };
  for (int r = 0; r < s.nranks; ++r) post(r);
  bool moved = true;
  bool strict = settled;
  while (moved) {
    moved = false;
    for (int r = 0; r < s.nranks; ++r) {
      auto& i = cur[static_cast<std::size_t>(r)];
      while (i < s.steps(r).size()) {
        if (!ready(r, i, strict)) break;
        complete(r);
        ++i;
        post(r);
        moved = true;
        if (!strict && settled) break;
      }
      if (moved && !strict && settled) break;
    }
    if (settled) {
      if (!moved && strict) {
        strict = false;  // nothing settled: let one step complete under the plain rule
        moved = true;
      } else {
        strict = true;
      }
    }
  }
  for (int r = 0; r < s.nranks; ++r) {
    if (cur[static_cast<std::size_t>(r)] < s.steps(r).size()) throw std::runtime_error("reference: deadlock");
  }
}

// Processor sharing: finish times of messages transmitted through one port that shares its
// bandwidth equally among those transmitting; message k begins at begin[k] and needs work[k] us
// alone on the port.
std::vector<double> shared_port(const std::vector<double>& begin, const std::vector<double>& work) {
  const std::size_t n = begin.size();
  std::vector<std::size_t> order(n);
  for (std::size_t k = 0; k < n; ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return begin[a] < begin[b]; });
  std::vector<double> left = work, finish(n, 0.0);
  std::vector<std::size_t> active;
  double t = 0;
  std::size_t next = 0;
  while (next < n || !active.empty()) {
    if (active.empty()) t = std::max(t, begin[order[next]]);
    while (next < n && begin[order[next]] <= t) {
      const std::size_t k = order[next++];
      if (left[k] > 0) active.push_back(k);
      else finish[k] = t;
    }
    if (active.empty()) continue;
    double least = left[active[0]];
    for (std::size_t k : active) least = std::min(least, left[k]);
    const auto m = static_cast<double>(active.size());
    if (next < n && begin[order[next]] < t + least * m) {
      const double dt = begin[order[next]] - t;
      for (std::size_t k : active) left[k] -= dt / m;
      t = begin[order[next]];
      continue;
    }
    t += least * m;
    std::vector<std::size_t> still;
    for (std::size_t k : active) {
      if (left[k] <= least) finish[k] = t;
      else {
        left[k] -= least;
        still.push_back(k);
      }
    }
    active.swap(still);
  }
  return finish;
}

}  // namespace

std::int64_t input_value(int rank, std::size_t i) {
  return static_cast<std::int64_t>((static_cast<std::size_t>(rank) * 7919 + i * 31) % 1000) - 300;
}

std::vector<std::vector<std::int64_t>> run_data(const Schedule& s) {
  const auto p = static_cast<std::size_t>(s.nranks);
  std::vector<std::vector<std::int64_t>> buf(p, std::vector<std::int64_t>(s.count, -7777));
  for (std::size_t r = 0; r < p; ++r) {
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
  for (int r = 0; r < s.nranks; ++r) {
    auto expect_sum = [&](const coll::Block& b) -> std::string {
      for (std::size_t i = b.offset; i < b.end(); ++i) {
        std::int64_t want = 0;
        for (int q = 0; q < s.nranks; ++q) want += input_value(q, i);
        if (bufs[static_cast<std::size_t>(r)][i] != want) return "rank " + std::to_string(r) + " element " + std::to_string(i);
      }
      return "";
    };
    std::string bad;
    switch (s.collective) {
      case coll::Collective::allreduce: bad = expect_sum({0, s.count}); break;
      case coll::Collective::reduce_scatter: bad = expect_sum(s.owned[static_cast<std::size_t>(r)]); break;
      case coll::Collective::allgather:
        for (int q = 0; q < s.nranks && bad.empty(); ++q) {
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

double price(const Schedule& s, const RankLayout& layout, std::size_t elem_size, const coll::LevelCosts& c) {
  const auto part = partners(s);
  auto intra = [&](int a, int b) { return layout.host_of(a) == layout.host_of(b); };
  auto wire_of = [&](int a, int b) {
    return intra(a, b) ? std::pair{c.alpha_intra_us, c.beta_intra_us_per_byte}
                       : std::pair{c.alpha_inter_us, c.beta_inter_us_per_byte};
  };
  std::vector<std::vector<double>> start(s.ranks.size());
  for (int r = 0; r < s.nranks; ++r) start[static_cast<std::size_t>(r)].assign(s.steps(r).size() + 1, 0.0);
  std::vector<std::size_t> cur;
  // When op k of step i of rank r finishes transmitting through r's port for its kind (sends
  // inject, receives eject) and, with separate_level_ports, its level (intra- or inter-host):
  // processor sharing among the step's ops through that port whose partner has posted, each
  // beginning when both ends have started their steps.
  auto port_finish = [&](int r, std::size_t i, std::size_t k) {
    const auto& ops = s.steps(r)[i].ops;
    const bool sends = ops[k].kind == OpKind::send;
    const bool in_host = intra(r, ops[k].peer);
    std::vector<double> begin, work;
    std::size_t mine = 0;
    for (std::size_t j = 0; j < ops.size(); ++j) {
      if ((ops[j].kind == OpKind::send) != sends) continue;
      if (c.separate_level_ports && intra(r, ops[j].peer) != in_host) continue;
      const Ref x = part[static_cast<std::size_t>(r)][i][j];
      if (cur[static_cast<std::size_t>(x.rank)] < x.step) continue;  // begins later
      if (j == k) mine = begin.size();
      begin.push_back(std::max(start[static_cast<std::size_t>(r)][i], start[static_cast<std::size_t>(x.rank)][x.step]));
      work.push_back(static_cast<double>(ops[j].block.count * elem_size) * wire_of(r, ops[j].peer).second);
    }
    return shared_port(begin, work)[mine];
  };
  auto complete = [&](int r) {
    const std::size_t i = cur[static_cast<std::size_t>(r)];
    const double t0 = start[static_cast<std::size_t>(r)][i];
    const auto& ops = s.steps(r)[i].ops;
    double end = t0;
    std::vector<std::pair<double, double>> reduces;  // (arrival, bytes)
    for (std::size_t k = 0; k < ops.size(); ++k) {
      const Ref x = part[static_cast<std::size_t>(r)][i][k];
      const double arrive =
          wire_of(r, ops[k].peer).first + std::max(port_finish(r, i, k), port_finish(x.rank, x.step, x.op));
      end = std::max(end, arrive);
      if (ops[k].kind == OpKind::recv_reduce) reduces.emplace_back(arrive, static_cast<double>(ops[k].block.count * elem_size));
    }
    std::sort(reduces.begin(), reduces.end());
    double free = t0;
    for (const auto& [arrive, bytes] : reduces) free = std::max(free, arrive) + bytes * c.gamma_us_per_byte;
    start[static_cast<std::size_t>(r)][i + 1] = std::max(end, free);
  };
  drive(s, [](int) {}, complete, cur, true);
  double last = 0;
  for (const auto& st : start) last = std::max(last, st.back());
  return last;
}

}  // namespace colltune::test

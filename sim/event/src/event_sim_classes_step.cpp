// One step of every class of the sweep by classes (event_sim_classes.cpp states the rules): each
// class's first block computes its ranks' step from their start, their peers' starts and the
// transfers' routes, with event_sim_sweep.cpp's expressions.
#include <algorithm>

#include "event_sim_classes.hpp"
#include "event_sim_engine.hpp"

namespace colltune::sim::detail {

double ClassSweep::time_of(const ClassRun& run, int block, int i) const {
  return base(run)[i] + (block - run.base_start) * run.delta;
}

const std::vector<RelOp>& ClassSweep::ops_of(const ClassRun& run, int i) const {
  if (run.own < 0) return template_[static_cast<std::size_t>(i)];
  return own_ops_[static_cast<std::size_t>(run.own) * static_cast<std::size_t>(period_) + static_cast<std::size_t>(i)];
}

// Every class's step from the times at its start (peers read the old times); each class is then
// based at its first block.
ClassSweep::Outcome ClassSweep::advance() {
  next_states_.clear();
  for (ClassRun& run : runs_) {
    const std::size_t at = next_states_.size();
    next_states_.resize(at + static_cast<std::size_t>(period_));
    for (int i = 0; i < period_; ++i)
      if (const Outcome o = rank_step(run, i, next_states_[at + static_cast<std::size_t>(i)]); o != Outcome::done) return o;
  }
  std::uint32_t state = 0;
  for (ClassRun& run : runs_) {
    run.state = state++;
    run.base_start = run.start;
  }
  std::swap(states_, next_states_);
  return Outcome::done;
}

// The op of rank `peer_index` of `peer_run` that pairs with `op` (the complementary kind from the
// opposite offset, same channel and count), if it is the only such op between the two.
const RelOp* ClassSweep::partner(const ClassRun& peer_run, int peer_index, const RelOp& op) const {
  const int back = (nranks_ - op.offset) % nranks_;
  const RelOp* found = nullptr;
  for (const RelOp& o : ops_of(peer_run, peer_index)) {
    if (o.offset != back || (o.kind == coll::OpKind::send) == (op.kind == coll::OpKind::send)) continue;
    if (found) return nullptr;
    found = &o;
  }
  if (!found || found->channel != op.channel || found->count != op.count) return nullptr;
  return found;
}

// The route of representative rank i's sends to i + offset on `channel`, checked once: its copies
// are rotations (else `failure` = asymmetric), and every class it crosses is its own, crossed once,
// by one copy at a time (else refused).
const ClassRoute* ClassSweep::route(int sender_index, int offset, std::uint16_t channel, Outcome& failure) {
  auto& cache = route_cache_[static_cast<std::size_t>(sender_index)];
  for (const auto& [o, c, r] : cache)
    if (o == offset && c == channel) return r;
  const RouteKey key{sender_index, offset, channel};
  const std::optional<FoldedRoute> folded = fold_.add_channel(sender_index, (sender_index + offset) % nranks_, channel);
  if (!folded) {
    failure = Outcome::asymmetric;
    return nullptr;
  }
  class_owner_.resize(fold_.num_classes(), RouteKey{-1, -1, 0});
  for (std::size_t h = 0; h < folded->classes.size(); ++h) {
    const std::uint32_t c = folded->classes[h];
    const auto before = folded->classes.begin() + static_cast<std::ptrdiff_t>(h);
    const bool twice = std::find(folded->classes.begin(), before, c) != before;
    if (fold_.multiplicity(c) != 1 || twice || (std::get<0>(class_owner_[c]) >= 0 && class_owner_[c] != key)) {
      failure = Outcome::refused;
      return nullptr;
    }
    class_owner_[c] = key;
  }
  const ClassRoute* r = &routes_.emplace_back(ClassRoute{folded->rate, folded->latency_us, folded->classes});
  cache.emplace_back(offset, channel, r);
  return r;
}

// A transfer of every block of `run` (sender side): its bytes and busy time on its links. Every
// link of a class carries one block's copy (multiplicity 1), block b the link of copy b.
void ClassSweep::record(const ClassRun& run, const ClassRoute& route, double bytes, double duration) {
  for (std::uint32_t c : route.classes) {
    if (bytes_diff_.size() <= c) {
      bytes_diff_.resize(c + 1);
      busy_diff_.resize(c + 1);
    }
    for (auto [diff, v] : {std::pair{&bytes_diff_[c], bytes}, std::pair{&busy_diff_[c], duration}}) {
      if (diff->empty()) diff->assign(static_cast<std::size_t>(blocks_) + 1, 0.0);
      (*diff)[static_cast<std::size_t>(run.start)] += v;
      (*diff)[static_cast<std::size_t>(run.start + run.length)] -= v;
    }
  }
}

// Rank i of `run`'s first block: when its step ends (event_sim_sweep.cpp's expressions).
ClassSweep::Outcome ClassSweep::rank_step(const ClassRun& run, int i, double& t_new) {
  const std::vector<RelOp>& ops = ops_of(run, i);
  const double t = time_of(run, run.start, i);
  t_new = t;
  if (ops.empty()) return Outcome::done;
  const auto copies = static_cast<std::size_t>(run.length);
  events_ += copies;  // the step's start
  reduces_.clear();
  const double gamma = gamma_[static_cast<std::size_t>(i)];
  for (const RelOp& op : ops) {
    const int peer_index = (i + op.offset) % period_;
    const int peer_block = wrap(run.start + block_shift(i, op.offset));
    const ClassRun& peer_run = runs_[run_of(peer_block)];
    if (!partner(peer_run, peer_index, op)) return Outcome::refused;  // not lockstep
    const bool send = op.kind == coll::OpKind::send;
    Outcome failure = Outcome::done;
    const ClassRoute* r = send ? route(i, op.offset, op.channel, failure)
                               : route(peer_index, (nranks_ - op.offset) % nranks_, op.channel, failure);
    if (!r) return failure;
    const double start = std::max(t, time_of(peer_run, peer_block, peer_index));
    const double bytes = static_cast<double>(op.count) * static_cast<double>(options_.elem_size);
    const bool on_links = bytes != 0 && !r->classes.empty();
    const double end = on_links ? start + bytes / r->rate : start;
    const double arrival = end + r->latency_us;
    if (send) {
      events_ += 2 * copies;  // the transfer's start and end
      flows_ += copies;
      if (on_links) record(run, *r, bytes, end - start);
    }
    if (!send && op.kind == coll::OpKind::recv_reduce && gamma > 0) {
      events_ += copies;  // its arrival at the reduction queue
      reduces_.emplace_back(arrival, bytes);
    } else {
      t_new = std::max(t_new, arrival);
    }
  }
  // The device is idle by the step's start (its earlier blocks ended with earlier steps): the
  // step's blocks are reduced one after another in arrival order.
  std::stable_sort(reduces_.begin(), reduces_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  double reduce_free = t;
  for (const auto& [arrival, bytes] : reduces_) {
    reduce_free = std::max(arrival, reduce_free) + bytes * gamma;
    t_new = std::max(t_new, reduce_free);
  }
  return Outcome::done;
}

}  // namespace colltune::sim::detail

// The discrete-event simulator's event loop: ranks walk their steps, posted sends and receives
// pair up in order per (sender, receiver) channel (rendezvous), each pair becomes a flow on the
// links of the route for its op channel (coll::Op::channel), and a flow's end completes both ops after the path latency (plus the reduction
// for recv_reduce). Bandwidth sharing lives in event_sim_rates.cpp.
//
// Events: a step start per rank (when the previous step's last op completes) and a flow end per
// transfer (when its last byte leaves; stale ends from before a rate change are skipped by
// version), and the arrival of each block to reduce (reductions queue at the receiving device in
// arrival order). All events of one instant are handled before the rates are recomputed once, so a
// batch of flows starting together costs one max-min computation. Blocks arriving at one instant
// join their devices' queues after the instant's other events, by receiving rank: ranks that share
// a device then queue in an order that does not depend on the order events were handled.
#include <algorithm>
#include <cmath>
#include <string>
#include <system_error>
#include <utility>

#include "colltune/common/error.hpp"
#include "event_sim_engine.hpp"

namespace colltune::sim::detail {
namespace {

std::string where(int rank, std::size_t step) {
  return "rank " + std::to_string(rank) + " step " + std::to_string(step);
}

// "send 3->4 [0,1024)" (built by appending: GCC 12 warns falsely on "literal" + temporary).
std::string slice_name(const char* what, int src, int dst, const coll::Block& b) {
  std::string name(what);
  name.append(" ").append(std::to_string(src)).append("->").append(std::to_string(dst));
  name.append(" [").append(std::to_string(b.offset)).append(",").append(std::to_string(b.end())).append(")");
  return name;
}

// The channel of `peer` in a rank's peer table (sorted by peer), or npos.
constexpr std::uint32_t kNone = 0xffffffffu;
std::uint32_t find_peer(const std::vector<std::pair<int, std::uint32_t>>& table, int peer) {
  auto it = std::lower_bound(table.begin(), table.end(), peer,
                             [](const std::pair<int, std::uint32_t>& e, int p) { return e.first < p; });
  return it != table.end() && it->first == peer ? it->second : kNone;
}

void insert_peer(std::vector<std::pair<int, std::uint32_t>>& table, int peer, std::uint32_t chan) {
  auto it = std::lower_bound(table.begin(), table.end(), peer,
                             [](const std::pair<int, std::uint32_t>& e, int p) { return e.first < p; });
  table.insert(it, {peer, chan});
}

}  // namespace

double rank_gamma(const topo::Topology& topology, int rank) {
  const double gbps = topology.reduce_gbps_of(topology.device_of_rank(rank));
  return gbps > 0 ? 1.0 / (gbps * 1e3) : 0.0;
}

void check_simulable(const coll::StepSource& source, const topo::Topology& topology, const EventSimOptions& options) {
  const coll::ScheduleHeader& h = source.header();
  if (h.nranks < 0) throw Error("schedule '" + h.algorithm + "': negative rank count " + std::to_string(h.nranks));
  if (h.nranks > topology.num_ranks())
    throw Error("topology '" + topology.name + "' has " + std::to_string(topology.num_ranks()) +
                " ranks, fewer than the schedule's " + std::to_string(h.nranks));
  if (options.elem_size == 0) throw Error("event simulator: elem_size must be positive");
  if (options.rank_start_us.empty()) return;
  if (options.rank_start_us.size() != static_cast<std::size_t>(h.nranks))
    throw Error("event simulator: " + std::to_string(options.rank_start_us.size()) + " rank start times for " +
                std::to_string(h.nranks) + " ranks");
  for (std::size_t r = 0; r < options.rank_start_us.size(); ++r) {
    const double t = options.rank_start_us[r];
    if (!(t >= 0) || !std::isfinite(t))
      throw Error("event simulator: rank " + std::to_string(r) + " start time " + std::to_string(t) +
                  " us is not a finite time >= 0");
  }
}

double start_of(const EventSimOptions& options, int rank) {
  return options.rank_start_us.empty() ? 0.0 : options.rank_start_us[static_cast<std::size_t>(rank)];
}

Engine::Engine(const coll::StepSource& source, const topo::Topology& topology, const EventSimOptions& options,
               Symmetry symmetry)
    : source_(source), header_(source.header()), topology_(topology), options_(options) {
  check_simulable(source, topology, options);
  const int period = symmetry.period;
  const bool folded = period > 0 && period < header_.nranks;
  if (folded) fold_.emplace(topology, header_.nranks, symmetry);
  const auto n = static_cast<std::size_t>(folded ? period : header_.nranks);
  ranks_.resize(n);
  gamma_.resize(n);
  device_.resize(n);
  reduce_free_.assign(topology.num_devices(), 0.0);
  for (std::size_t r = 0; r < n; ++r) {
    ranks_[r].nsteps = source.num_steps(static_cast<int>(r));
    gamma_[r] = rank_gamma(topology, static_cast<int>(r));
    device_[r] = topology.device_of_rank(static_cast<int>(r));
  }
  if (folded) return;  // links_ are the link classes, added as routes meet them (folded_route)
  // Runs on time were offered to the fold already (simulate_schedule).
  refold_ = options.fast_path && !options.record_trace && header_.nranks > 1 &&
            std::any_of(options.rank_start_us.begin(), options.rank_start_us.end(), [](double t) { return t > 0; }) &&
            (source.rotation_period() > 0 || source.xor_period() > 0);
  links_.resize(topology.num_links());
  for (std::size_t l = 0; l < links_.size(); ++l) links_[l].capacity = topology.link(l).bandwidth_gbps * 1e3;
  if (options.fast_path && RoutePrefetch::worth_it(source)) {
    try {
      prefetch_ = std::make_unique<RoutePrefetch>(source, topology);
    } catch (const std::system_error&) {
      // No thread to be had (a process limit): the queue finds every route itself.
    }
  }
}

EventSimResult Engine::run() {
  // Ranks that start late enter their first step from the queue, as a step start.
  for (int r = 0; r < static_cast<int>(ranks_.size()); ++r) {
    const double start = start_of(options_, r);
    if (start > 0) {
      ranks_[static_cast<std::size_t>(r)].waiting_to_start = true;
      queue_.push(Event{start, static_cast<std::uint32_t>(r), 0});
    } else {
      enter_step(r, 0.0);
    }
  }
  update_rates(0.0);
  while (!queue_.empty()) {
    const double t = queue_.pop_instant(instant_);
    for (const Event& ev : instant_) handle(ev, t);
    // Events pushed for t itself are handled first, then the blocks that arrived at t are
    // queued (which may complete steps at t): one rate update per instant.
    if (queue_.due_now()) continue;
    reduce_arrivals(t);
    if (queue_.due_now()) continue;
    if (refold_ && together_in_step(t))
      if (std::optional<EventSimResult> rest = refold(t)) return joined(std::move(*rest), t);
    update_rates(t);
  }
  check_finished();
  return collect();
}

void Engine::handle(const Event& ev, double t) {
  const std::uint32_t index = ev.id & kIndexMask;
  if (ev.id & kFlowBit) {
    if (flows_[index].version == ev.version && flows_[index].on_links) end_flow(index, t);
  } else if (ev.id & kArrivalBit) {
    arrived_.push_back(index);  // queued at the end of the instant (reduce_arrivals)
  } else {
    RankState& rs = ranks_[index];
    if (rs.waiting_to_start) {
      rs.waiting_to_start = false;  // its first step, not the next one
    } else {
      ++rs.step;
    }
    enter_step(static_cast<int>(index), t);
  }
}

// Starts the rank's current step at t (skipping empty steps) and posts its ops.
void Engine::enter_step(int rank, double t) {
  auto& rs = ranks_[static_cast<std::size_t>(rank)];
  for (; rs.step < rs.nsteps; ++rs.step) {
    rs.ops = source_.ops(rank, rs.step, rs.scratch);
    if (!rs.ops.empty()) break;
  }
  if (rs.step >= rs.nsteps) {
    rs.finished = true;
    rs.finish_us = t;
    return;
  }
  ++result_.events;
  if (refold_) count_entry(rs.step);
  rs.outstanding = static_cast<std::uint32_t>(rs.ops.size());
  rs.step_end = t;
  for (std::size_t i = 0; i < rs.ops.size(); ++i) post(rank, static_cast<std::uint32_t>(i), rs.ops[i], t);
}

void Engine::post(int rank, std::uint32_t op_index, const coll::Op& op, double t) {
  if (op.peer < 0 || op.peer >= header_.nranks || op.peer == rank)
    throw Error("schedule '" + header_.algorithm + "': " + where(rank, ranks_[static_cast<std::size_t>(rank)].step) +
                ": peer " + std::to_string(op.peer) + " out of range or self");
  const Pending me{op_index, op.channel, op.kind == coll::OpKind::recv_reduce, op.block.count};
  const bool is_send = op.kind == coll::OpKind::send;
  int src = is_send ? rank : op.peer;
  int dst = is_send ? op.peer : rank;
  if (fold_ && !is_send) {
    // The receive at a representative from `peer` is the rotation of the channel from peer's
    // representative, so both ends name one channel (sender a representative).
    src = fold_->representative(op.peer);
    dst = fold_->shift(rank, fold_->to_representative(op.peer));
  }
  const std::uint32_t c = channel(src, dst);
  Pending other;
  if (!channels_[c].posted.pair(is_send, me, other)) return;
  if (is_send) {
    start_flow(c, me, other, src, dst, t);
  } else {
    start_flow(c, other, me, src, dst, t);
  }
}

// The channel src->dst, created on first use.
std::uint32_t Engine::channel(int src, int dst) {
  auto& out = ranks_[static_cast<std::size_t>(src)].out;
  if (out.size() == 1 && out.front().first == dst) return out.front().second;  // rings: one peer
  std::uint32_t id = find_peer(out, dst);
  if (id != kNone) return id;
  id = static_cast<std::uint32_t>(channels_.size());
  channels_.emplace_back();
  insert_peer(out, dst, id);
  return id;
}

// The route of channel src->dst on op channel `op_channel`, looked up once per op channel.
std::uint32_t Engine::route_of(std::uint32_t chan, int src, int dst, std::uint16_t op_channel) {
  Channel& ch = channels_[chan];
  if (ch.first_route != Channel::kNoRoute && ch.first_op_channel == op_channel) return ch.first_route;
  for (const auto& [c, id] : ch.other_routes)
    if (c == op_channel) return id;
  const auto id = static_cast<std::uint32_t>(routes_.size());
  routes_.push_back(fold_ ? folded_route(src, dst, op_channel) : unfolded_route(src, dst, op_channel));
  if (ch.first_route == Channel::kNoRoute) {
    ch.first_op_channel = op_channel;
    ch.first_route = id;
  } else {
    ch.other_routes.emplace_back(op_channel, id);
  }
  return id;
}

// The route of a send src -> dst in src's current step (a rank leaves a step only once its sends
// are done, so a send being paired is of its sender's current step): found ahead where it was.
const topo::Path* Engine::unfolded_route(int src, int dst, std::uint16_t op_channel) {
  const topo::Path* found =
      prefetch_ ? prefetch_->find(src, ranks_[static_cast<std::size_t>(src)].step, dst, op_channel) : nullptr;
  if (found == nullptr) return &topology_.route(src, dst, op_channel);
  ++result_.routes_found_ahead;
  return found;
}

// The route src -> dst (src a representative) as link classes, each hop once; NotFoldable when
// its copies are not its rotation, its links' bandwidths differ among copies, or two hops share
// a class (their multiplicities would differ from the class's other flows').
const topo::Path* Engine::folded_route(int src, int dst, std::uint16_t op_channel) {
  const std::optional<FoldedRoute> route = fold_->add_channel(src, dst, op_channel);
  if (!route || !route->uniform_links) throw NotFoldable{};
  const topo::Path& path = topology_.route(src, dst, op_channel);
  if (links_.size() < fold_->num_classes()) {
    links_.resize(fold_->num_classes());
    multiplicity_.resize(fold_->num_classes(), 0);
  }
  topo::Path& folded = folded_paths_.emplace_back();
  folded.bottleneck_gbps = path.bottleneck_gbps;
  folded.latency_us = path.latency_us;
  for (std::size_t hop = 0; hop < path.links.size(); ++hop) {
    const std::uint32_t cls = route->classes[hop];
    if (std::find(folded.links.begin(), folded.links.end(), cls) != folded.links.end()) throw NotFoldable{};
    const int m = fold_->multiplicity(cls);
    const double capacity = topology_.link(path.links[hop]).bandwidth_gbps * 1e3 / m;
    if (multiplicity_[cls] == 0) {
      multiplicity_[cls] = m;
      links_[cls].capacity = capacity;
    } else if (multiplicity_[cls] != m || links_[cls].capacity != capacity) {
      throw NotFoldable{};
    }
    folded.links.push_back(cls);
  }
  return &folded;
}

const coll::Op& Engine::current_op(int rank, std::uint32_t index) const {
  return ranks_[static_cast<std::size_t>(rank)].ops[index];
}

std::uint32_t Engine::new_flow() {
  if (!free_flows_.empty()) {
    const std::uint32_t f = free_flows_.back();
    free_flows_.pop_back();
    return f;
  }
  if (flows_.size() >= kIndexMask) throw Error("event simulator: more than 2^30 transfers in flight at once");
  flows_.emplace_back();
  return static_cast<std::uint32_t>(flows_.size() - 1);
}

void Engine::start_flow(std::uint32_t chan, const Pending& send, const Pending& recv, int src, int dst, double t) {
  if (send.count != recv.count)
    throw Error("schedule '" + header_.algorithm + "': send of " + std::to_string(send.count) +
                " elements at " + where(src, ranks_[static_cast<std::size_t>(src)].step) + " is received as " +
                std::to_string(recv.count) + " elements at " + where(rank_of(dst), ranks_[static_cast<std::size_t>(rank_of(dst))].step));
  if (send.channel != recv.channel)
    throw Error("schedule '" + header_.algorithm + "': send on channel " + std::to_string(send.channel) + " at " +
                where(src, ranks_[static_cast<std::size_t>(src)].step) + " is received on channel " +
                std::to_string(recv.channel) + " at " + where(rank_of(dst), ranks_[static_cast<std::size_t>(rank_of(dst))].step));
  const std::uint32_t route = route_of(chan, src, dst, send.channel);
  const std::uint32_t f = new_flow();
  FlowState& fl = flows_[f];
  fl.src = src;
  fl.dst = rank_of(dst);  // the receiving representative when folded
  fl.send_op = send.op;
  fl.recv_op = recv.op;
  fl.chan = route;
  fl.path = routes_[route];
  fl.bytes = static_cast<double>(send.count) * static_cast<double>(options_.elem_size);
  fl.left = fl.bytes;
  fl.rate = 0;
  fl.last_t = t;
  fl.start_t = t;
  fl.reduce = recv.reduce;
  ++result_.events;
  ++result_.flows;
  if (fl.bytes == 0 || fl.path->links.empty()) {  // nothing to share: only the latency
    end_flow(f, t);
    return;
  }
  fl.on_links = true;
  for (std::size_t l : fl.path->links) {
    LinkState& link = links_[l];
    if (link.flows.empty()) link.busy_since = t;
    link.flows.push_back(f);
  }
  new_flows_.push_back(f);
}

// The flow's last byte left the sender at t: free its links, complete both ops on arrival.
void Engine::end_flow(std::uint32_t f, double t) {
  FlowState& fl = flows_[f];
  ++result_.events;
  if (fl.on_links) {
    for (std::size_t l : fl.path->links) {
      LinkState& link = links_[l];
      auto it = std::find(link.flows.begin(), link.flows.end(), f);
      *it = link.flows.back();
      link.flows.pop_back();
      link.bytes += fl.bytes;
      if (link.flows.empty()) {
        link.busy_us += t - link.busy_since;
      } else {
        dirty_links_.push_back(l);
      }
    }
    fl.on_links = false;
  }
  const double arrival = t + fl.path->latency_us;
  if (options_.record_trace) record_transfer(fl, arrival);
  complete_op(fl.src, arrival);
  if (fl.reduce && gamma_[static_cast<std::size_t>(fl.dst)] > 0) {
    // The reduction queues at the receiving device in arrival order: wait for the arrival.
    fl.arriving = true;
    queue_.push(Event{arrival, kArrivalBit | f, fl.version});
    return;
  }
  complete_op(fl.dst, arrival);
  release_flow(f);
}

// The blocks that arrived at t join their devices' queues, by receiving rank (stable: a rank's
// own blocks in the order they arrived).
void Engine::reduce_arrivals(double t) {
  if (arrived_.empty()) return;
  if (arrived_.size() > 1)
    std::stable_sort(arrived_.begin(), arrived_.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return flows_[a].dst < flows_[b].dst; });
  for (std::uint32_t f : arrived_) reduce_arrival(f, t);
  arrived_.clear();
}

// A block to reduce arrived at t: the receiving device reduces it after what it has queued.
void Engine::reduce_arrival(std::uint32_t f, double t) {
  FlowState& fl = flows_[f];
  const auto dst = static_cast<std::size_t>(fl.dst);
  double& device_free = reduce_free_[device_[dst]];
  const double start = std::max(t, device_free);
  device_free = start + fl.bytes * gamma_[dst];
  if (options_.record_trace && device_free > start) {
    const coll::Op& recv = current_op(fl.dst, fl.recv_op);
    result_.trace.push_back({fl.dst, slice_name("reduce", fl.src, fl.dst, recv.block), start, device_free,
                             static_cast<std::size_t>(fl.bytes)});
  }
  ++result_.events;
  fl.arriving = false;
  complete_op(fl.dst, device_free);
  release_flow(f);
}

void Engine::release_flow(std::uint32_t f) {
  ++flows_[f].version;
  free_flows_.push_back(f);
}

// One op of the rank's current step completes at done_t; the last one schedules the next step.
void Engine::complete_op(int rank, double done_t) {
  RankState& rs = ranks_[static_cast<std::size_t>(rank)];
  rs.step_end = std::max(rs.step_end, done_t);
  if (--rs.outstanding == 0) queue_.push(Event{rs.step_end, static_cast<std::uint32_t>(rank), 0});
}

void Engine::record_transfer(const FlowState& fl, double arrival) {
  const coll::Op& send = current_op(fl.src, fl.send_op);
  const coll::Op& recv = current_op(fl.dst, fl.recv_op);
  const auto bytes = static_cast<std::size_t>(fl.bytes);
  if (result_.trace.size() >= options_.max_trace_slices)
    throw Error("trace: more than " + std::to_string(options_.max_trace_slices) + " slices (" +
                std::to_string(header_.nranks) + " ranks of '" + header_.algorithm +
                "'); trace fewer ranks or larger chunks");
  result_.trace.push_back({fl.src, slice_name("send", fl.src, fl.dst, send.block), fl.start_t, arrival, bytes});
  result_.trace.push_back({fl.dst, slice_name("recv", fl.src, fl.dst, recv.block), fl.start_t, arrival, bytes});
}

// Every rank must have run out of steps; otherwise ops were left unpaired (a deadlock).
void Engine::check_finished() const {
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    if (ranks_[r].finished) continue;
    const RankState& rs = ranks_[r];
    throw Error("schedule '" + header_.algorithm + "': deadlock, " + where(static_cast<int>(r), rs.step) + " waits for " +
                std::to_string(rs.outstanding) + " op(s) whose peers never post a matching send/receive");
  }
}

EventSimResult Engine::collect() {
  EventSimResult out = std::move(result_);
  out.rank_finish_us.reserve(static_cast<std::size_t>(header_.nranks));
  for (int r = 0; r < header_.nranks; ++r) {
    const double finish = ranks_[static_cast<std::size_t>(rank_of(r))].finish_us;
    out.rank_finish_us.push_back(finish);
    out.time_us = std::max(out.time_us, finish);
  }
  if (fold_) {
    unfold(out);
  } else {
    for (std::size_t l = 0; l < links_.size(); ++l)
      if (links_[l].bytes > 0) out.links.push_back({l, links_[l].bytes, links_[l].busy_us});
  }
  out.incremental_solves = solver_.counts().incremental;
  out.recalled_solves = solver_.counts().recalled;
  out.full_solves = solver_.counts().filled;
  return out;
}

// A folded run's counts and links as the unfolded run's: every flow and event stands for its
// copies, every link of a class carries the class's flows `multiplicity` times at once.
void Engine::unfold(EventSimResult& out) const {
  const auto copies = static_cast<std::size_t>(fold_->copies());
  out.event_fold_period = fold_->period();
  out.fold_by_xor = fold_->symmetry().kind == Symmetry::Kind::exclusive_or;
  out.events *= copies;
  out.flows *= copies;
  for (std::size_t l = 0; l < topology_.num_links(); ++l) {
    const std::uint32_t c = fold_->class_of(l);
    if (c == Fold::kNone || c >= links_.size() || links_[c].bytes <= 0) continue;
    out.links.push_back({l, links_[c].bytes * multiplicity_[c], links_[c].busy_us});
  }
}

std::optional<EventSimResult> event_queue_folded(const coll::StepSource& source, const topo::Topology& topology,
                                                 const EventSimOptions& options) {
  const int n = source.header().nranks;
  if (n < 2 || n > topology.num_ranks() || (source.rotation_period() == 0 && source.xor_period() == 0))
    return std::nullopt;
  if (ranks_share_a_reducing_device(topology, n)) return std::nullopt;
  for (const Symmetry symmetry : fold_symmetries(source)) {
    if (symmetry.period == n || !ranks_rotate(source, topology, symmetry.period)) continue;
    try {
      Engine engine(source, topology, options, symmetry);
      return engine.run();
    } catch (const NotFoldable&) {
      continue;  // the machine breaks this period's symmetry: try a longer one
    } catch (const Error&) {
      return std::nullopt;  // a malformed schedule: the unfolded engine names the ranks
    }
  }
  return std::nullopt;
}

}  // namespace colltune::sim::detail

// The reference pricer (pricer.hpp states the machine model): a small event-driven run of the
// schedule in time order. Three kinds of events: a message leaves one of its two ports, a
// message arrives, a step ends after its reductions. Ports serve their messages by processor
// sharing, kept with a virtual clock per port: while m messages are in service the clock runs at
// 1/m, and a message of work w that joins at virtual time v leaves when the clock reaches v + w.
#include "colltune/sim/pricer.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "colltune/common/error.hpp"

namespace colltune::sim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A port shared equally among the messages in service (processor sharing).
class Port {
 public:
  // The real time at which the next message leaves; +infinity when idle.
  double next_leave() const {
    if (queue_.empty()) return kInf;
    return std::max(now_, now_ + (queue_.top().first - clock_) * static_cast<double>(queue_.size()));
  }
  void join(double t, double work, std::uint32_t message) {
    advance(t);
    queue_.emplace(clock_ + work, message);
  }
  std::uint32_t leave(double t) {
    advance(t);
    const std::uint32_t message = queue_.top().second;
    queue_.pop();
    return message;
  }
  std::uint64_t version = 0;  // bumped whenever the set in service changes

 private:
  void advance(double t) {
    if (!queue_.empty()) clock_ += (t - now_) / static_cast<double>(queue_.size());
    now_ = t;
  }
  using Entry = std::pair<double, std::uint32_t>;  // (virtual leave time, message)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue_;
  double clock_ = 0;
  double now_ = 0;
};

struct Message {
  int from = 0;
  int to = 0;
  double bytes = 0;
  double alpha = 0;
  bool reduce = false;
  int ports_left = 0;
};

// An op posted by a rank and not yet paired with its partner.
struct Posted {
  int rank = 0;
  std::size_t count = 0;
  bool reduce = false;  // a recv_reduce
};

// Posted ops of one ordered rank pair (a -> b): all sends or all receives, oldest first.
struct PairQueue {
  std::vector<Posted> waiting;
  std::size_t head = 0;
  bool sends = false;
};

struct RankState {
  std::size_t step = 0;  // index of the current (or next) step in the source
  double start = 0;
  std::size_t pending = 0;  // messages of the current step not yet arrived
  double last_arrival = 0;
  std::vector<std::pair<double, double>> reduces;  // (arrival, bytes) of the step's reduced blocks
  bool done = false;
  double finish = 0;
};

enum class EventKind : std::uint8_t { port, arrival, step_end };

struct Event {
  double t = 0;
  std::uint64_t seq = 0;  // insertion order: equal times are handled first come, first served
  EventKind kind = EventKind::port;
  std::uint32_t id = 0;
  std::uint64_t version = 0;
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

class Pricer {
 public:
  Pricer(const coll::StepSource& source, const RankLayout& layout, std::size_t elem_size, const coll::LevelCosts& costs)
      : source_(source), layout_(layout), elem_size_(elem_size), costs_(costs),
        ranks_(static_cast<std::size_t>(source.header().nranks)),
        ports_(4 * static_cast<std::size_t>(source.header().nranks) + 2 * static_cast<std::size_t>(layout.nhosts())) {}

  double run() {
    for (int r = 0; r < static_cast<int>(ranks_.size()); ++r) post(r, 0.0);
    while (!events_.empty()) {
      const Event ev = events_.top();
      events_.pop();
      handle(ev);
    }
    double last = 0;
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
      if (!ranks_[r].done)
        throw Error("schedule '" + source_.header().algorithm + "' deadlocks: rank " + std::to_string(r) +
                    " waits forever in step " + std::to_string(ranks_[r].step));
      last = std::max(last, ranks_[r].finish);
    }
    return last;
  }

 private:
  void push(double t, EventKind kind, std::uint32_t id, std::uint64_t version = 0) {
    events_.push(Event{t, seq_++, kind, id, version});
  }

  void handle(const Event& ev) {
    switch (ev.kind) {
      case EventKind::port: {
        Port& port = ports_[ev.id];
        if (ev.version != port.version) return;  // the set in service changed since
        const std::uint32_t m = port.leave(ev.t);
        reschedule(ev.id);
        left_port(m, ev.t);
        return;
      }
      case EventKind::arrival: arrive(messages_[ev.id], ev.t); return;  // a copy: arrive() may add messages
      case EventKind::step_end: end_step(static_cast<int>(ev.id), ev.t); return;
    }
  }

  // Starts rank r's next non-empty step at time t (or finishes the rank).
  void post(int r, double t) {
    RankState& st = ranks_[static_cast<std::size_t>(r)];
    const std::size_t steps = source_.num_steps(r);
    std::span<const coll::Op> ops;
    for (; st.step < steps; ++st.step) {
      ops = source_.ops(r, st.step, scratch_);
      if (!ops.empty()) break;
    }
    if (st.step >= steps) {
      st.done = true;
      st.finish = t;
      return;
    }
    st.start = t;
    st.pending = ops.size();
    st.last_arrival = t;
    st.reduces.clear();
    const std::vector<coll::Op> mine(ops.begin(), ops.end());  // pairing may reuse scratch_
    for (const coll::Op& op : mine) pair(r, op, t);
  }

  // Pairs op of rank r with its partner (FIFO per ordered pair) and begins the message when
  // the partner has posted.
  void pair(int r, const coll::Op& op, double t) {
    const bool send = op.kind == coll::OpKind::send;
    const int from = send ? r : op.peer;
    const int to = send ? op.peer : r;
    if (op.peer < 0 || op.peer >= static_cast<int>(ranks_.size()))
      throw Error("schedule '" + source_.header().algorithm + "': rank " + std::to_string(r) + " names peer " +
                  std::to_string(op.peer) + ", not a rank");
    PairQueue& q = pairs_[(static_cast<std::uint64_t>(from) << 32) | static_cast<std::uint32_t>(to)];
    const Posted me{r, op.block.count, op.kind == coll::OpKind::recv_reduce};
    if (q.head == q.waiting.size() || q.sends == send) {
      if (q.head == q.waiting.size()) q.waiting.clear(), q.head = 0;
      q.sends = send;
      q.waiting.push_back(me);
      return;
    }
    const Posted other = q.waiting[q.head++];
    if (other.count != me.count)
      throw Error("schedule '" + source_.header().algorithm + "': a message from rank " + std::to_string(from) +
                  " to rank " + std::to_string(to) + " pairs blocks of " + std::to_string(send ? me.count : other.count) +
                  " and " + std::to_string(send ? other.count : me.count) + " elements");
    begin(from, to, me.count, send ? other.reduce : me.reduce, t);
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

  // A switch helper's port towards (from) or from one peer: the switch's link to that GPU.
  std::uint32_t switch_port(int self, int peer, bool inject) {
    const std::uint64_t key = (static_cast<std::uint64_t>(self) << 33) | (static_cast<std::uint64_t>(peer) << 1) |
                              (inject ? 1U : 0U);
    const auto [it, added] = switch_ports_.emplace(key, static_cast<std::uint32_t>(ports_.size()));
    if (added) ports_.emplace_back();
    return it->second;
  }
  bool in_switch(int r) const {
    return costs_.switch_helpers && r >= source_.header().nranks - source_.header().helpers;
  }

  void begin(int from, int to, std::size_t count, bool reduce, double t) {
    const bool inter = layout_.host_of(from) != layout_.host_of(to);
    const double beta = inter ? costs_.beta_inter_us_per_byte : costs_.beta_intra_us_per_byte;
    Message m;
    m.from = from;
    m.to = to;
    m.bytes = static_cast<double>(count * elem_size_);
    m.alpha = inter ? costs_.alpha_inter_us : costs_.alpha_intra_us;
    if (in_switch(from) || in_switch(to)) m.alpha = costs_.switch_alpha_us;  // one link to the switch
    m.reduce = reduce;
    const auto id = static_cast<std::uint32_t>(messages_.size());
    messages_.push_back(m);
    const double work = m.bytes * beta;
    const double host_work = inter ? m.bytes * costs_.beta_host_us_per_byte : 0.0;
    if (work > 0) {
      join(in_switch(from) ? switch_port(from, to, true) : port_of(from, true, inter), work, id, t);
      join(in_switch(to) ? switch_port(to, from, false) : port_of(to, false, inter), work, id, t);
    }
    if (host_work > 0) {  // a network switch's own ports are per link (switch_port), not a host's NICs
      if (!in_switch(from)) join(host_port(layout_.host_of(from), true), host_work, id, t);
      if (!in_switch(to)) join(host_port(layout_.host_of(to), false), host_work, id, t);
    }
    if (messages_[id].ports_left == 0) push(t + m.alpha, EventKind::arrival, id);
  }

  void join(std::uint32_t p, double work, std::uint32_t message, double t) {
    ++messages_[message].ports_left;
    ports_[p].join(t, work, message);
    reschedule(p);
  }

  void reschedule(std::uint32_t p) {
    Port& port = ports_[p];
    ++port.version;
    const double t = port.next_leave();
    if (t < kInf) push(t, EventKind::port, p, port.version);
  }

  void left_port(std::uint32_t id, double t) {
    Message& m = messages_[id];
    if (--m.ports_left == 0) push(t + m.alpha, EventKind::arrival, id);
  }

  void arrive(Message m, double t) {
    for (int r : {m.from, m.to}) {
      RankState& st = ranks_[static_cast<std::size_t>(r)];
      st.last_arrival = std::max(st.last_arrival, t);
      if (r == m.to && m.reduce) st.reduces.emplace_back(t, m.bytes);
      if (--st.pending == 0) finish_step(r, t);
    }
  }

  // Every message of rank r's step has arrived at time t: combine the reduced blocks in arrival
  // order from the step's start, then end the step.
  void finish_step(int r, double t) {
    RankState& st = ranks_[static_cast<std::size_t>(r)];
    std::sort(st.reduces.begin(), st.reduces.end());
    double free = st.start;
    const double gamma = in_switch(r) ? costs_.switch_gamma_us_per_byte : costs_.gamma_us_per_byte;
    for (const auto& [arrival, bytes] : st.reduces) free = std::max(free, arrival) + bytes * gamma;
    const double end = std::max(st.last_arrival, free);
    if (end > t) {
      push(end, EventKind::step_end, static_cast<std::uint32_t>(r));
    } else {
      end_step(r, t);
    }
  }

  void end_step(int r, double t) {
    ++ranks_[static_cast<std::size_t>(r)].step;
    post(r, t);
  }

  const coll::StepSource& source_;
  const RankLayout& layout_;
  std::size_t elem_size_;
  const coll::LevelCosts& costs_;
  std::vector<RankState> ranks_;
  std::vector<Port> ports_;
  std::vector<Message> messages_;
  std::unordered_map<std::uint64_t, PairQueue> pairs_;
  std::unordered_map<std::uint64_t, std::uint32_t> switch_ports_;  // (switch, peer, direction) -> port
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::uint64_t seq_ = 0;
  std::vector<coll::Op> scratch_;
};

}  // namespace

double price_schedule(const coll::StepSource& source, const RankLayout& layout, std::size_t elem_size,
                      const coll::LevelCosts& costs) {
  const int p = source.header().nranks;
  if (p > layout.nranks())
    throw Error("schedule '" + source.header().algorithm + "' has " + std::to_string(p) + " ranks, the layout only " +
                std::to_string(layout.nranks()));
  if (p <= 0) return 0;
  return Pricer(source, layout, elem_size, costs).run();
}

}  // namespace colltune::sim

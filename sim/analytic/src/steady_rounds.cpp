// Settled pipelines and their steady round (steady_rounds.hpp).
#include "steady_rounds.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "colltune/common/parallel.hpp"

namespace colltune::sim::detail {

// Probes run so far (sim::steady_round_probes).
std::atomic<std::size_t>& probes() {
  static std::atomic<std::size_t> n{0};
  return n;
}

namespace {

// The first probe, in rounds.
constexpr std::size_t kFirstProbe = 4;
// Relative agreement that counts as settled.
constexpr double kSettled = 1e-10;
// Pipelines kept; past that the memo starts over (a search then begins again, with the same answer).
constexpr std::size_t kMemoEntries = std::size_t{1} << 12;

// A pipeline's search so far: every probe before `next` failed; `rounds` is the settled probe
// once found (0 before), `step` its steady round. `next` starts at 0 for the first probe of the
// pipeline's sequence (first_probe()).
struct Search {
  std::size_t next = 0;
  std::size_t rounds = 0;
  double step = 0;
};

struct Memo {
  std::mutex mutex;
  std::unordered_map<std::string, Search> pipelines;
};
Memo& memo() {
  static Memo m;
  return m;
}

bool agrees(double x, double y) { return std::abs(x - y) <= kSettled * std::abs(y); }

// A probe's runs: t(r0) and t(r0 + 1), and the steady round between them.
struct Adjacent {
  double at_next = 0;  // t(r0 + 1)
  double step = 0;     // t(r0 + 1) - t(r0)
};

// The request's price extended from a settled probe at r0.
double extend(const Adjacent& a, std::size_t r0, std::size_t rounds) {
  return a.at_next + static_cast<double>(rounds - r0 - 1) * a.step;
}

// The rounds a probe at r0 is checked over: as many as the probe, at least the window.
std::size_t span(std::size_t r0, std::size_t window) { return std::max(r0, window); }

// Three runs at r0, r0 + 1 and r0 + w rounds, w = span(r0, window) (on several threads): the
// steady round where the w rounds after r0 cost w times the round after it, else nullopt.
std::optional<Adjacent> settled_at(const RoundsPrice& price, std::size_t r0, std::size_t window, bool last_chunks) {
  ++probes();
  const std::size_t w = span(r0, window);
  const std::vector<double> t = parallel_map(3, [&](std::size_t i) {
    return price(i == 0 ? r0 : i == 1 ? r0 + 1 : r0 + w, last_chunks);
  });
  const Adjacent a{t[1], t[1] - t[0]};
  if (!agrees(t[2] - t[0], static_cast<double>(w) * a.step)) return std::nullopt;
  return a;
}

// Whether a probe at r0 is shorter than the request's pipeline of `rounds` rounds: how far a
// request searches, and whether it extends from a probe at r0 found by another. The same rule
// for both, so that a request is extended exactly where its own search would have found the
// probe: whether another request found it first does not change the price, not even its last bit.
bool probe_pays(std::size_t r0, std::size_t window, std::size_t rounds) { return r0 + span(r0, window) + 1 < rounds; }

// The first probe of a pipeline's sequence.
std::size_t first_probe(FirstProbe first, std::size_t window) {
  return first == FirstProbe::window ? std::max(kFirstProbe, std::bit_ceil(window)) : kFirstProbe;
}

// The pipeline's settled probe on whole rounds, searching on while the request's rounds make
// it pay; nullopt when not found that far.
std::optional<Search> settled_pipeline(const std::string& key, std::size_t rounds, std::size_t window,
                                       const RoundsPrice& price, FirstProbe first) {
  Memo& m = memo();
  Search s;
  {
    const std::lock_guard<std::mutex> lock(m.mutex);
    if (m.pipelines.size() >= kMemoEntries) m.pipelines.clear();
    s = m.pipelines[key];
  }
  if (s.next == 0) s.next = first_probe(first, window);
  while (s.rounds == 0 && probe_pays(s.next, window, rounds)) {
    if (const std::optional<Adjacent> a = settled_at(price, s.next, window, false)) {
      s.rounds = s.next;
      s.step = a->step;
    } else {
      s.next *= 2;
    }
    const std::lock_guard<std::mutex> lock(m.mutex);
    Search& kept = m.pipelines[key];
    if (kept.rounds == 0 && (s.rounds != 0 || s.next > kept.next)) kept = s;
  }
  if (s.rounds == 0) return std::nullopt;
  return s;
}

}  // namespace

std::optional<double> price_from_steady_rounds(const std::string& pipeline_key, std::size_t rounds,
                                               const Window& window_of, const RoundsPrice& price, FirstProbe first) {
  // No probe pays below 2 kFirstProbe + 1 rounds (a window is at least the probe).
  if (!probe_pays(kFirstProbe, kFirstProbe, rounds)) return std::nullopt;
  const std::size_t window = window_of();
  const std::optional<Search> pipeline = settled_pipeline(pipeline_key, rounds, window, price, first);
  if (!pipeline || !probe_pays(pipeline->rounds, window, rounds)) return std::nullopt;
  const std::size_t r0 = pipeline->rounds;
  // Two runs with the request's last chunks: settled where their round is the pipeline's.
  const std::vector<double> t = parallel_map(2, [&](std::size_t i) { return price(r0 + i, true); });
  const Adjacent own{t[1], t[1] - t[0]};
  if (agrees(own.step, pipeline->step)) return extend(own, r0, rounds);
  // These last chunks settle later: their own search, from the next probe on.
  for (std::size_t probe = 2 * r0; probe_pays(probe, window, rounds); probe *= 2)
    if (const std::optional<Adjacent> a = settled_at(price, probe, window, true)) return extend(*a, probe, rounds);
  return std::nullopt;
}

void forget_settled_pipelines() {
  Memo& m = memo();
  const std::lock_guard<std::mutex> lock(m.mutex);
  m.pipelines.clear();
}

}  // namespace colltune::sim::detail

namespace colltune::sim {

std::size_t steady_round_probes() { return detail::probes().load(); }

}  // namespace colltune::sim

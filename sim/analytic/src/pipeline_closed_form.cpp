// Families of pipeline sizes and their closed forms (pipeline_closed_form.hpp).
#include "colltune/sim/pipeline_closed_form.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "colltune/collectives/step_source.hpp"
#include "colltune/common/memo_key.hpp"
#include "colltune/common/once_map.hpp"
#include "colltune/sim/pricer.hpp"
#include "parametric_pricer.hpp"

namespace colltune::sim {
namespace {


using detail::ParametricPrice;
using detail::price_parametric;
using detail::same_family;

// Piece sizes of one-chunk families run up to this (2^40 elements a piece).
constexpr std::uint64_t kLargestPiece = std::uint64_t{1} << 40;
// Canonical runs a request may take before its count is priced whole instead.
constexpr int kMaxDepth = 8;
// Families and whole prices kept; past that the memo starts over.
constexpr std::size_t kMemoEntries = std::size_t{1} << 13;
// Schedules kept at a family's points (its canonical points, their neighbours, the ends of its
// pieces); past that the memo starts over.
constexpr std::size_t kBuiltSchedules = 8;

// A range of piece sizes q (inclusive).
struct Range {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  bool contains(std::uint64_t q) const { return lo <= q && q <= hi; }
};

// The family of piece size q (count = q P + r): every q' >= 1 for which every piece is one
// chunk (q' + 1 <= chunk_elems when r > 0, q' <= chunk_elems otherwise; any q' without
// chunking). None for q = 0, and for pipelines of several rounds: there the last chunk's
// messages cross the earlier chunks' at every few elements of q, and a family's parametric runs
// would each cover only a sliver of it (measured: 50 runs for 30 sizes of a 16-round dbtree on
// 64 ranks), so those are priced whole.
std::optional<Range> family_range(std::uint64_t q, std::uint64_t r, std::uint64_t chunk) {
  if (q == 0 || q > kLargestPiece) return std::nullopt;
  if (chunk == 0) return Range{1, kLargestPiece};
  const std::uint64_t largest = chunk - (r > 0 ? 1 : 0);
  if (q > largest) return std::nullopt;
  return Range{1, largest};
}

// The canonical point of a part of a family: inside it at the golden section (geometrically
// where it spans more than 4x). Not its middle: the pricer's breakpoints tend to sit at simple
// fractions of a chunk, where a run would find a piece of one point.
std::uint64_t middle(const Range& r) {
  constexpr double kSection = 0.6180339887498949;
  if (r.hi / 4 > r.lo) {
    const double lo = std::log(static_cast<double>(r.lo));
    const double hi = std::log(static_cast<double>(r.hi));
    return std::clamp(static_cast<std::uint64_t>(std::llround(std::exp(lo + kSection * (hi - lo)))), r.lo, r.hi);
  }
  return r.lo + static_cast<std::uint64_t>(kSection * static_cast<double>(r.hi - r.lo));
}

// One parametric run's result: the price is a + b q over [lo, hi] (integers).
struct Piece {
  Range range;
  double a = 0;
  double b = 0;
};

struct Family {
  Range range;
  bool checked = false;
  bool valid = false;
  std::map<std::uint64_t, Piece> runs;  // by canonical point
};

struct Memo {
  std::mutex mutex;
  std::unordered_map<std::string, Family> families;
  // Whether a family's schedules are affine in q (check_family), by its schedules' key: the
  // same on every machine, whatever its costs.
  std::unordered_map<std::string, bool> shapes;
};
Memo& memo() {
  static Memo m;
  return m;
}

struct Counters {
  std::atomic<std::size_t> closed_form{0}, runs{0}, whole{0}, memo{0}, checks{0}, builds{0};
};
Counters& counters() {
  static Counters c;
  return c;
}

// Prices of counts priced whole, each computed once however many threads ask: a pipeline's
// settled-round searches for two buffer sizes (steady_rounds.hpp) run the same probes, often at
// the same moment on the tuner's threads, and each whole price is the reference pricer's run.
OnceMap<std::string, double>& whole_prices() {
  static OnceMap<std::string, double> whole(kMemoEntries);
  return whole;
}

// The schedules built at a family's points, by their schedules' key and count. Machines that
// differ only in costs (the bottleneck line's what-if machines, a sweep's) price the same
// family at the same points: each such schedule is built once, not once per machine (a
// 16,384-rank dbtree is a tenth of a second to build). A StepSource is only read, so the
// machines' threads share it.
using BuiltSchedule = std::shared_ptr<const coll::StepSource>;
OnceMap<std::string, BuiltSchedule>& built_schedules() {
  static OnceMap<std::string, BuiltSchedule> built(kBuiltSchedules);
  return built;
}

// What one request needs to price its family's schedules.
struct Request {
  const coll::Algorithm& algorithm;
  const RankLayout& layout;
  std::size_t elem_size;
  const coll::AlgoOptions& options;
  const coll::LevelCosts& levels;
  std::uint64_t pieces;
  std::uint64_t remainder;
  const std::string& schedules;  // the schedules' key (algorithm, options, layout)

  std::size_t count_of(std::uint64_t q) const { return static_cast<std::size_t>(q * pieces + remainder); }
  // The schedule at a family's point q (kept in built_schedules).
  BuiltSchedule schedule(std::uint64_t q) const {
    const std::size_t count = count_of(q);
    std::string key = schedules;
    append_raw(key, count);
    return built_schedules().get(key, [&] {
      ++counters().builds;
      return BuiltSchedule(coll::open_schedule(algorithm.id, layout, count, options));
    });
  }
  // The whole pricer's price at a family's point q.
  double whole_at(std::uint64_t q) const { return price_schedule(*schedule(q), layout, elem_size, levels); }
  // The whole pricer's price of any count (its schedule built for it alone).
  double whole(std::size_t count) const {
    return price_schedule(*coll::open_schedule(algorithm.id, layout, count, options), layout, elem_size, levels);
  }
};

// A neighbour of q inside the range, to read the slope of the counts from.
std::uint64_t neighbour(std::uint64_t q, const Range& range) { return q < range.hi ? q + 1 : q - 1; }

// Whether the schedules at the family's ends are the affine function of q that q0 and its
// neighbour draw.
bool check_family(const Request& rq, const Range& range, std::uint64_t q0) {
  if (range.lo == range.hi) return false;
  const auto base = rq.schedule(q0);
  const std::uint64_t q1 = neighbour(q0, range);
  const auto slope = rq.schedule(q1);
  for (std::uint64_t end : {range.lo, range.hi}) {
    if (end == q0 || end == q1) continue;
    if (!same_family(*base, static_cast<std::int64_t>(q0), *slope, static_cast<std::int64_t>(q1), *rq.schedule(end),
                     static_cast<std::int64_t>(end)))
      return false;
  }
  return true;
}

// Whether the piece's form gives the whole pricer's price, to kPieceCheck, at the piece's ends
// (those other than m). A safeguard, not the proof: PipelineClosedFormLong found pieces that
// held a decision the parametric clock did not see (a message's ports left in another order,
// fixed in pricer_engine.hpp; others on clusters of 512 ranks with shared NICs or trunks not yet
// found), and such a piece is wrong at one of its ends. Two whole pricings per run.
constexpr double kPieceCheck = 1e-12;
bool ends_agree(const Request& rq, const Piece& piece, std::uint64_t m) {
  for (std::uint64_t end : {piece.range.lo, piece.range.hi}) {
    if (end == m) continue;
    const double whole = rq.whole_at(end);
    const double form = piece.a + piece.b * static_cast<double>(end);
    if (std::abs(form - whole) > kPieceCheck * std::abs(whole)) return false;
  }
  return true;
}

// The parametric run at canonical point m of `part`: its piece, confined to `part`.
std::optional<Piece> run_at(const Request& rq, std::uint64_t m, const Range& part, const Range& family) {
  const std::uint64_t m1 = neighbour(m, family);
  const auto s0 = rq.schedule(m);
  const auto s1 = rq.schedule(m1);
  const std::optional<ParametricPrice> p =
      price_parametric(*s0, static_cast<double>(m), *s1, static_cast<double>(m1), rq.layout, rq.elem_size, rq.levels,
                       static_cast<double>(part.lo), static_cast<double>(part.hi));
  ++counters().runs;
  if (!p) return std::nullopt;
  Piece piece;
  piece.range.lo = static_cast<std::uint64_t>(std::ceil(p->lo));
  piece.range.hi = static_cast<std::uint64_t>(std::floor(p->hi));
  piece.a = p->a;
  piece.b = p->b;
  if (!ends_agree(rq, piece, m)) piece = Piece{{m, m}, p->at_x0, 0.0};  // only the point run is sure
  return piece;
}

// Empties the memo when it holds kMemoEntries (mutex held).
void bound(Memo& m) {
  if (m.families.size() + m.shapes.size() >= kMemoEntries) {
    m.families.clear();
    m.shapes.clear();
  }
}

// The family's entry (created; the memo emptied first when full).
Family& family_entry(Memo& m, const std::string& key, const Range& range) {
  bound(m);
  Family& f = m.families[key];
  f.range = range;
  return f;
}

// The price at q from the family's pieces, running canonical points as needed; nullopt when
// the family does not hold or q needs more than kMaxDepth runs.
std::optional<double> from_family(const Request& rq, const std::string& key, const std::string& shape,
                                  const Range& range, std::uint64_t q) {
  Memo& m = memo();
  {
    std::unique_lock<std::mutex> lock(m.mutex);
    Family& f = family_entry(m, key, range);
    if (!f.checked) {
      std::optional<bool> valid;
      if (const auto it = m.shapes.find(shape); it != m.shapes.end()) valid = it->second;
      if (!valid) {
        lock.unlock();
        valid = check_family(rq, range, middle(range));
        ++counters().checks;
        lock.lock();
        bound(m);
        m.shapes.emplace(shape, *valid);
      }
      Family& g = family_entry(m, key, range);
      g.checked = true;
      g.valid = *valid;
    }
    if (!m.families[key].valid) return std::nullopt;
  }
  Range part = range;
  for (int depth = 0; depth < kMaxDepth; ++depth) {
    const std::uint64_t point = middle(part);
    std::optional<Piece> piece;
    {
      const std::lock_guard<std::mutex> lock(m.mutex);
      Family& f = family_entry(m, key, range);
      if (auto it = f.runs.find(point); it != f.runs.end()) piece = it->second;
    }
    if (!piece) {
      piece = run_at(rq, point, part, range);
      if (!piece) return std::nullopt;
      const std::lock_guard<std::mutex> lock(m.mutex);
      family_entry(m, key, range).runs.emplace(point, *piece);
    }
    if (piece->range.contains(q)) return piece->a + piece->b * static_cast<double>(q);
    if (q < piece->range.lo) {
      part.hi = std::min(piece->range.lo, point) - 1;
    } else {
      part.lo = std::max(piece->range.hi, point) + 1;
    }
    if (!part.contains(q)) return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

double price_by_family(const std::string& key, const std::string& schedules, const coll::Algorithm& algorithm,
                       const RankLayout& layout, std::size_t count, std::size_t elem_size,
                       const coll::AlgoOptions& options, const coll::LevelCosts& levels, bool use_family) {
  const std::uint64_t pieces = algorithm.pipeline_pieces ? algorithm.pipeline_pieces(layout, options) : 0;
  const Request rq{algorithm, layout, elem_size, options, levels, pieces, pieces > 0 ? count % pieces : 0, schedules};
  if (pieces > 0 && use_family) {
    const std::uint64_t q = count / pieces;
    if (const std::optional<Range> range = family_range(q, rq.remainder, options.chunk_elems)) {
      std::string family = std::string(1, '\0');  // the family in its schedules' and its price's keys
      append_raw(family, rq.remainder);
      append_raw(family, range->lo);
      append_raw(family, range->hi);
      if (const std::optional<double> t = from_family(rq, key + family, schedules + family, *range, q)) {
        ++counters().closed_form;
        return *t;
      }
    }
  }
  std::string whole_key = key;
  append_raw(whole_key, count);
  bool priced = false;
  const double t = whole_prices().get(whole_key, [&] {
    priced = true;
    return rq.whole(count);
  });
  ++(priced ? counters().whole : counters().memo);
  return t;
}

void forget_family_prices() {
  Memo& m = memo();
  const std::lock_guard<std::mutex> lock(m.mutex);
  m.families.clear();
  m.shapes.clear();
  whole_prices().clear();
}

FamilyCounts family_counts() {
  const Counters& c = counters();
  return {c.closed_form.load(), c.runs.load(), c.whole.load(), c.memo.load(), c.checks.load(), c.builds.load()};
}

}  // namespace colltune::sim

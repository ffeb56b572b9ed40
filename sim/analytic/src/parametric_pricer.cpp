// The reference pricer on affine numbers (parametric_pricer.hpp): the clock that decides and
// narrows, the reader of two schedules of one family.
#include "parametric_pricer.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "pricer_engine.hpp"

namespace colltune::sim::detail {
namespace {

// Affine forms are computed along other operations than the values: a comparison whose affine
// difference at x0 is within this fraction of its terms' size of zero is taken as undecided.
constexpr double kRoundingSlack = 1e-10;
// Affine forms whose coefficients differ by less than this fraction are one form.
constexpr double kTieSlack = 1e-11;
// Around a crossing point the exact side is uncertain by rounding: keep this far from it.
constexpr double kCrossingMargin = 1e-7;

struct NotAFamily {};

// Decides comparisons by the values at x0 and keeps [lo, hi] to the x that decide them alike.
class AffineClock {
 public:
  using Num = Affine;
  AffineClock(double x0, double lo, double hi) : x0_(x0), lo_(lo), hi_(hi) {}
  bool less(const Affine& x, const Affine& y) {
    const bool r = x.v < y.v;
    keep(x, y, r ? 1 : (x.v == y.v ? 0 : -1));
    return r;
  }
  bool equal(const Affine& x, const Affine& y) {
    const bool r = x.v == y.v;
    keep(x, y, r ? 0 : (x.v < y.v ? 1 : -1));
    return r;
  }
  bool positive(const Affine& x) { return less(Affine{}, x); }
  // `earlier` was handled before `later` at x0 (by the values); it must be so over [lo, hi].
  void in_order(const Affine& earlier, const Affine& later) {
    keep(earlier, later, earlier.v < later.v ? 1 : (earlier.v == later.v ? 0 : -1));
  }
  static bool quiet_less(const Affine& x, const Affine& y) { return x.v < y.v; }
  static bool quiet_equal(const Affine& x, const Affine& y) { return x.v == y.v; }
  // Blocks coalesce where the plain pricer's do (one size at x0); where that holds at x0 only,
  // the run would not be the plain pricer's elsewhere in the family.
  static bool same_size(const Affine& x, const Affine& y) {
    if (x.v != y.v) return false;
    if (x.a != y.a || x.b != y.b) throw NotAFamily{};
    return true;
  }
  double lo() const { return lo_; }
  double hi() const { return hi_; }

 private:
  // The sign of y - x, d.a + d.b q, must stay `sign` over [lo, hi]. Forms equal up to rounding
  // are a tie at every q (two times reached along different operations): the order the values
  // took is as good as any, the pricer's results being continuous in its times. Each coefficient
  // is compared on its own: a's rounding is that of v - b x0, so its scale is the forms' size at
  // x0, not at the range's far end (scaled by a family's hi of 2^40, a difference in a of a
  // tenth of a microsecond would pass for a tie).
  void keep(const Affine& x, const Affine& y, int sign) {
    if (lo_ == hi_) return;  // nothing left to narrow
    const Affine d = y - x;
    const double slope = std::abs(x.b) + std::abs(y.b);
    if (std::abs(d.b) <= kTieSlack * slope &&
        std::abs(d.a) <= kTieSlack * (std::abs(x.a) + std::abs(y.a) + slope * std::abs(x0_)))
      return;
    if (sign == 0) {
      collapse();
      return;
    }
    const double at = d.a + d.b * x0_;
    const double size = std::abs(d.a) + std::abs(d.b * x0_);
    if (sign * at <= kRoundingSlack * size) {
      collapse();  // the forms do not see the side the values took: only x0 is sure
      return;
    }
    if (d.b == 0) return;
    const double z = -d.a / d.b;  // where the forms cross
    const double margin = kCrossingMargin * (std::abs(z) + std::abs(x0_)) + 1e-9;
    if ((sign > 0) == (d.b > 0)) {
      lo_ = std::max(lo_, z + margin);
    } else {
      hi_ = std::min(hi_, z - margin);
    }
    if (!(lo_ <= x0_ && x0_ <= hi_)) collapse();
  }
  void collapse() { lo_ = hi_ = x0_; }

  double x0_;
  double lo_;
  double hi_;
};

// Reads two schedules of one family op by op: the first's counts at x0, their line through the
// second's at x1 as each op's bytes.
class AffineReader {
 public:
  AffineReader(const coll::StepSource& s0, double x0, const coll::StepSource& s1, double x1, std::size_t elem)
      : s0_(s0), s1_(s1), x0_(x0), per_x_(static_cast<double>(elem) / (x1 - x0)), elem_(elem) {
    if (s0.header().nranks != s1.header().nranks) throw NotAFamily{};
  }
  const coll::ScheduleHeader& header() const { return s0_.header(); }
  std::size_t num_steps(int rank) const {
    const std::size_t n = s0_.num_steps(rank);
    if (s1_.num_steps(rank) != n) throw NotAFamily{};
    return n;
  }
  // The fold's symmetry is compared op by op here: the two sources' declarations are each of one
  // size.
  bool turns_with_hosts(const RankLayout& /*layout*/) const { return false; }
  // Both sources read alike from the other end: so are the affine numbers of their ops.
  bool mirrors_ranks() const { return s0_.mirrors_ranks() && s1_.mirrors_ranks(); }
  void ops(int rank, std::size_t step, std::vector<PricedOp<Affine>>& out) {
    out.clear();
    const std::span<const coll::Op> o0 = s0_.ops(rank, step, scratch0_);
    const std::span<const coll::Op> o1 = s1_.ops(rank, step, scratch1_);
    if (o0.size() != o1.size()) throw NotAFamily{};
    for (std::size_t i = 0; i < o0.size(); ++i) {
      if (o0[i].kind != o1[i].kind || o0[i].peer != o1[i].peer) throw NotAFamily{};
      const double v = static_cast<double>(o0[i].block.count * elem_);
      const double b = (static_cast<double>(o1[i].block.count) - static_cast<double>(o0[i].block.count)) * per_x_;
      out.push_back({o0[i].kind, o0[i].peer, o0[i].block.count, Affine{v, v - b * x0_, b}});
    }
  }

 private:
  const coll::StepSource& s0_;
  const coll::StepSource& s1_;
  double x0_;
  double per_x_;  // bytes per unit of x per element of difference
  std::size_t elem_;
  std::vector<coll::Op> scratch0_;
  std::vector<coll::Op> scratch1_;
};

// Whether the count c at x lies on the line through (xb, cb) and (xs, cs), exactly.
bool on_line(std::size_t cb, std::int64_t xb, std::size_t cs, std::int64_t xs, std::size_t c, std::int64_t x) {
  __extension__ typedef __int128 Wide;
  const Wide lhs = static_cast<Wide>(c) * (xs - xb);
  const Wide rhs = static_cast<Wide>(cb) * (xs - xb) + (static_cast<Wide>(cs) - static_cast<Wide>(cb)) * (x - xb);
  return lhs == rhs;
}

}  // namespace

std::optional<ParametricPrice> price_parametric(const coll::StepSource& at_x0, double x0, const coll::StepSource& at_x1,
                                                double x1, const RankLayout& layout, std::size_t elem_size,
                                                const coll::LevelCosts& costs, double lo, double hi) {
  try {
    AffineReader reader(at_x0, x0, at_x1, x1, elem_size);
    AffineClock clock(x0, lo, hi);
    const Affine t = PricerEngine<AffineClock, AffineReader>(reader, clock, layout, costs).run();
    return ParametricPrice{t.v, t.a, t.b, clock.lo(), clock.hi()};
  } catch (const NotAFamily&) {
    return std::nullopt;
  }
}

bool same_family(const coll::StepSource& base, std::int64_t xb, const coll::StepSource& slope, std::int64_t xs,
                 const coll::StepSource& other, std::int64_t x) {
  const int p = base.header().nranks;
  if (slope.header().nranks != p || other.header().nranks != p) return false;
  std::vector<coll::Op> sb;
  std::vector<coll::Op> ss;
  std::vector<coll::Op> so;
  for (int r = 0; r < p; ++r) {
    const std::size_t n = base.num_steps(r);
    if (slope.num_steps(r) != n || other.num_steps(r) != n) return false;
    for (std::size_t step = 0; step < n; ++step) {
      const std::span<const coll::Op> ob = base.ops(r, step, sb);
      const std::span<const coll::Op> os = slope.ops(r, step, ss);
      const std::span<const coll::Op> oo = other.ops(r, step, so);
      if (ob.size() != os.size() || ob.size() != oo.size()) return false;
      for (std::size_t i = 0; i < ob.size(); ++i) {
        if (ob[i].kind != oo[i].kind || ob[i].peer != oo[i].peer || ob[i].kind != os[i].kind || ob[i].peer != os[i].peer)
          return false;
        if (!on_line(ob[i].block.count, xb, os[i].block.count, xs, oo[i].block.count, x)) return false;
      }
    }
  }
  return true;
}

}  // namespace colltune::sim::detail

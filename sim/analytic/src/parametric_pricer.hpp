#pragma once
// The reference pricer run on affine numbers: one run of the pricer at a size gives the price as
// an affine function a + b x of a size parameter x, and the range of x over which it holds.
//
// Every time and size the pricer computes is a sum of the messages' bytes times costs, of
// latencies, and of such terms divided by counts of messages in service; every decision it takes
// (which event is first, which message leaves a port first, the later of two times) compares two
// of them. When the messages' bytes are affine in x, so is every number, as long as the
// decisions go the same way; each comparison is decided by the numbers' values at the query x0,
// exactly as the plain pricer decides it, and narrows the range of x to where the affine forms
// would decide it the same. The run's result is then, for every x in that range, the plain
// pricer's result up to rounding (the affine form is computed along other floating-point
// operations), and exactly the plain pricer's number at x0.
//
// A decision that is a tie, or too close to one to be sure of its side, at x0 leaves only x0.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "colltune/collectives/registry.hpp"
#include "colltune/collectives/step_source.hpp"
#include "colltune/common/rank_layout.hpp"

namespace colltune::sim::detail {

// A number of the parametric run: its value at the query and its affine form in x.
struct Affine {
  double v = 0;  // at x0, computed exactly as the plain pricer computes it
  double a = 0;  // a + b x
  double b = 0;
};
inline Affine operator+(const Affine& x, const Affine& y) { return {x.v + y.v, x.a + y.a, x.b + y.b}; }
inline Affine operator-(const Affine& x, const Affine& y) { return {x.v - y.v, x.a - y.a, x.b - y.b}; }
inline Affine operator+(const Affine& x, double c) { return {x.v + c, x.a + c, x.b}; }
inline Affine operator*(const Affine& x, double c) { return {x.v * c, x.a * c, x.b * c}; }
inline Affine operator/(const Affine& x, double c) { return {x.v / c, x.a / c, x.b / c}; }

// The outcome of a parametric run.
struct ParametricPrice {
  double at_x0 = 0;  // the plain pricer's price at x0, bit for bit
  double a = 0;      // the price is a + b x for x in [lo, hi]
  double b = 0;
  double lo = 0;
  double hi = 0;
};

// Prices `at_x0` (the schedule at parameter x0) as an affine function of x, given the same
// algorithm's schedule `at_x1` at another parameter x1 in the same family: both must have the
// same steps, ops, peers and kinds, op by op (their counts give each message's bytes as an
// affine function of x); nullopt when they do not. Throws colltune::Error as price_schedule does.
std::optional<ParametricPrice> price_parametric(const coll::StepSource& at_x0, double x0, const coll::StepSource& at_x1,
                                                double x1, const RankLayout& layout, std::size_t elem_size,
                                                const coll::LevelCosts& costs, double lo, double hi);

// Whether `other` has the same steps, ops, peers and kinds as `base`, and counts that lie on the
// lines through `base`'s and `slope`'s counts at their parameters xb, xs (x the parameter of
// `other`): the check that a family's schedules are one affine function of x.
bool same_family(const coll::StepSource& base, std::int64_t xb, const coll::StepSource& slope, std::int64_t xs,
                 const coll::StepSource& other, std::int64_t x);

}  // namespace colltune::sim::detail

// The reference pricer (pricer.hpp states the machine model): its event loop is
// pricer_engine.hpp's, run on plain doubles.
#include "colltune/sim/pricer.hpp"

#include <atomic>
#include <string>

#include "colltune/common/error.hpp"
#include "pricer_engine.hpp"

namespace colltune::sim {

namespace {

// Runs folded so far (folded_pricer_runs), and mirrored (mirrored_pricer_runs).
std::atomic<std::size_t>& folded_runs() {
  static std::atomic<std::size_t> n{0};
  return n;
}
std::atomic<std::size_t>& mirrored_runs() {
  static std::atomic<std::size_t> n{0};
  return n;
}

double price(const coll::StepSource& source, const RankLayout& layout, std::size_t elem_size,
             const coll::LevelCosts& costs, bool shortcuts) {
  const int p = source.header().nranks;
  if (p > layout.nranks())
    throw Error("schedule '" + source.header().algorithm + "' has " + std::to_string(p) + " ranks, the layout only " +
                std::to_string(layout.nranks()));
  if (p <= 0) return 0;
  detail::PlainReader reader(source, elem_size);
  detail::PlainClock clock;
  detail::PricerEngine<detail::PlainClock, detail::PlainReader> engine(reader, clock, layout, costs, shortcuts);
  const double t = engine.run();
  if (engine.folded() > 0) ++folded_runs();
  if (engine.mirrored()) ++mirrored_runs();
  return t;
}

}  // namespace

std::size_t folded_pricer_runs() { return folded_runs().load(); }
std::size_t mirrored_pricer_runs() { return mirrored_runs().load(); }

double price_schedule(const coll::StepSource& source, const RankLayout& layout, std::size_t elem_size,
                      const coll::LevelCosts& costs) {
  return price(source, layout, elem_size, costs, true);
}

double price_schedule_op_by_op(const coll::StepSource& source, const RankLayout& layout, std::size_t elem_size,
                               const coll::LevelCosts& costs) {
  return price(source, layout, elem_size, costs, false);
}

}  // namespace colltune::sim

// The reference pricer (pricer.hpp states the machine model): its event loop is
// pricer_engine.hpp's, run on plain doubles.
#include "colltune/sim/pricer.hpp"

#include <string>

#include "colltune/common/error.hpp"
#include "pricer_engine.hpp"

namespace colltune::sim {

namespace {

double price(const coll::StepSource& source, const RankLayout& layout, std::size_t elem_size,
             const coll::LevelCosts& costs, bool coalesce_copies) {
  const int p = source.header().nranks;
  if (p > layout.nranks())
    throw Error("schedule '" + source.header().algorithm + "' has " + std::to_string(p) + " ranks, the layout only " +
                std::to_string(layout.nranks()));
  if (p <= 0) return 0;
  detail::PlainReader reader(source, elem_size);
  detail::PlainClock clock;
  return detail::PricerEngine<detail::PlainClock, detail::PlainReader>(reader, clock, layout, costs, coalesce_copies)
      .run();
}

}  // namespace

double price_schedule(const coll::StepSource& source, const RankLayout& layout, std::size_t elem_size,
                      const coll::LevelCosts& costs) {
  return price(source, layout, elem_size, costs, true);
}

double price_schedule_op_by_op(const coll::StepSource& source, const RankLayout& layout, std::size_t elem_size,
                               const coll::LevelCosts& costs) {
  return price(source, layout, elem_size, costs, false);
}

}  // namespace colltune::sim

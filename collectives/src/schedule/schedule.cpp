// Schedule basics: counters and names. The validator lives in validate.cpp.
#include "colltune/collectives/schedule.hpp"

namespace colltune::coll {

std::string_view to_string(Collective c) {
  switch (c) {
    case Collective::allreduce: return "allreduce";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::allgather: return "allgather";
  }
  return "unknown";
}

std::size_t Schedule::total_ops() const {
  std::size_t n = 0;
  for (const auto& steps_of_rank : ranks) {
    for (const auto& step : steps_of_rank) n += step.ops.size();
  }
  return n;
}

std::size_t Schedule::total_elements_sent() const {
  std::size_t n = 0;
  for (const auto& steps_of_rank : ranks) {
    for (const auto& step : steps_of_rank) {
      for (const auto& op : step.ops) {
        if (op.kind == OpKind::send) n += op.block.count;
      }
    }
  }
  return n;
}

}  // namespace colltune::coll

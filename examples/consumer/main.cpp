// Builds a ring allreduce schedule for a topology preset and prices it with the analytical
// model: the smallest use of the installed libraries.
#include <cstdio>
#include <exception>

#include "colltune/collectives/registry.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/topology/topology.hpp"

int main() {
  try {
    const colltune::topo::Topology topology = colltune::topo::load_topology("dgx-h100:nodes=2");
    const auto schedule = colltune::coll::build_schedule("ring", topology.rank_layout(), 1 << 20);
    colltune::sim::CostModel model(topology);
    colltune::sim::CollectiveRequest request;
    request.bytes = 4u << 20;
    std::printf("ranks=%d steps=%zu predicted_us=%.1f\n", schedule.nranks, schedule.steps(0).size(),
                model.time_us(request));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 2;
  }
  return 0;
}

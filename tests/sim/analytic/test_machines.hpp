#pragma once
// The level costs the analytic tests price on: NVLink-like inside hosts, a slower network
// between them, ports per level or shared, and host NICs shared by `host_nics` ranks' worth of
// traffic or not at all (0).
#include "colltune/collectives/registry.hpp"

namespace colltune::sim::test_machines {

inline coll::LevelCosts test_costs(bool separate, double host_nics) {
  coll::LevelCosts c;
  c.alpha_intra_us = 2.0;
  c.beta_intra_us_per_byte = 1e-4;
  c.alpha_inter_us = 7.0;
  c.beta_inter_us_per_byte = 4e-4;
  c.gamma_us_per_byte = 3e-5;
  c.separate_level_ports = separate;
  c.beta_host_us_per_byte = host_nics > 0 ? c.beta_inter_us_per_byte / host_nics : 0.0;
  return c;
}

}  // namespace colltune::sim::test_machines

// with_nvls_switch(): the host's NVSwitch as one more rank (topology.hpp), for nccl_nvls, whose
// last participant is the switch that reduces in the network (NVLink SHARP).
#include <limits>
#include <string>

#include "colltune/common/error.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::topo {

Topology with_nvls_switch(const Topology& topology) {
  if (topology.num_ranks() < 1) throw Error("topology '" + topology.name + "' has no ranks");
  const int host = topology.host_of_rank(0);
  std::optional<VertexId> nvswitch;
  for (VertexId v = 0; v < topology.num_devices(); ++v) {
    const Device& d = topology.device(v);
    if (d.kind == DeviceKind::nvswitch && d.host == host && d.switch_reduction == SwitchReduction::nvls) {
      nvswitch = v;
      break;
    }
  }
  if (!nvswitch)
    throw Error("topology '" + topology.name + "': no NVSwitch that reduces in the switch (switch_reduction nvls)");
  Topology t = topology;
  t.map_rank(t.num_ranks(), *nvswitch);
  t.name = topology.name + " + nvswitch rank";
  t.validate();
  return t;
}

}  // namespace colltune::topo

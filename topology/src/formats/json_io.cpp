// The versioned topology JSON format: the writer, and load_topology_json() over the strict
// reader in json_read.cpp.
#include "colltune/topology/json_io.hpp"

#include <nlohmann/json.hpp>

#include "colltune/common/finite.hpp"
#include "colltune/common/atomic_file.hpp"
#include "graph/text_util.hpp"

namespace colltune::topo {
namespace {

using ojson = nlohmann::ordered_json;

ojson device_json(const Topology& t, VertexId v) {
  const Device& d = t.device(v);
  ojson j;
  j["id"] = d.id;
  j["kind"] = to_string(d.kind);
  if (d.host >= 0) j["host"] = t.host_name(d.host);
  if (const double reduce = t.reduce_gbps_of(v); reduce != 0) j["reduce_gbps"] = reduce;
  if (d.compute_capability != 0) j["compute_capability"] = d.compute_capability;
  if (d.nccl_cpu) j["nccl_cpu"] = to_string(*d.nccl_cpu);
  if (d.switch_reduction != SwitchReduction::none) j["switch_reduction"] = to_string(d.switch_reduction);
  return j;
}

ojson links_json(const Topology& t) {
  ojson links = ojson::array();
  for (std::size_t i = 0; i < t.num_links(); ++i) {
    const Link& l = t.link(i);
    ojson j;
    j["from"] = t.device(t.link_source(i)).id;
    j["to"] = t.device(t.link_target(i)).id;
    j["kind"] = to_string(l.kind);
    j["bandwidth_gbps"] = l.bandwidth_gbps;
    j["latency_us"] = l.latency_us;
    if (detail::is_duplex_pair(t, i)) {
      j["duplex"] = true;
      ++i;
    }
    links.push_back(std::move(j));
  }
  return links;
}

}  // namespace

std::string to_json(const Topology& t) {
  ojson root;
  root["format"] = kJsonFormatName;
  root["version"] = kJsonFormatVersion;
  root["name"] = t.name;
  root["description"] = t.description;
  if (!t.gpu.empty()) root["gpu"] = t.gpu;
  if (t.transport != NetTransport::ib) root["transport"] = std::string(to_string(t.transport));
  root["hosts"] = ojson::array();
  for (int h = 0; h < t.num_hosts(); ++h) root["hosts"].push_back(t.host_name(h));
  root["devices"] = ojson::array();
  for (VertexId v = 0; v < t.num_devices(); ++v) root["devices"].push_back(device_json(t, v));
  root["links"] = links_json(t);
  root["ranks"] = ojson::array();
  for (int r = 0; r < t.num_ranks(); ++r)
    root["ranks"].push_back(ojson{{"rank", r}, {"device", t.device(t.device_of_rank(r)).id}});
  if (!t.calibration.empty()) root["calibration"] = ojson::parse(t.calibration);
  return finite::json_text(root, 2, "the topology JSON") + "\n";
}

Topology load_topology_json(const std::filesystem::path& path) {
  return topology_from_json(read_file(path), path.string());
}

}  // namespace colltune::topo

// Reader for the topology JSON format. Strict: unknown keys, wrong types, unknown kinds,
// dangling device references, non-positive bandwidths and rank lists with gaps or repeats are
// errors of the form "FILE: FIELD: problem (got VALUE)". A "comment" key is allowed anywhere.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>

#include "colltune/common/error.hpp"
#include "colltune/common/json_input.hpp"
#include "colltune/topology/hardware.hpp"
#include "colltune/topology/json_io.hpp"
#include "graph/text_util.hpp"

namespace colltune::topo {
namespace {

using nlohmann::json;

using json_input::shown;

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    throw Error(source_ + ": " + field + ": " + problem);
  }

  const json& object(const json& v, const std::string& field) const {
    if (!v.is_object()) fail(field, "expected an object, got " + shown(v));
    return v;
  }
  const json& array(const json& obj, const char* key, const std::string& field) const {
    const json& v = required(obj, key, field);
    if (!v.is_array()) fail(field.empty() ? key : field + "." + key, "expected an array, got " + shown(v));
    return v;
  }
  const json& required(const json& obj, const char* key, const std::string& field) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail(field.empty() ? key : field + "." + key, "missing");
    return *it;
  }
  std::string string(const json& obj, const char* key, const std::string& field) const {
    const json& v = required(obj, key, field);
    if (!v.is_string() || v.get_ref<const std::string&>().empty())
      fail(field + "." + key, "expected a non-empty string, got " + shown(v));
    return v.get<std::string>();
  }
  // The name at `key` parsed by `parse` (a parse_* function); its error, which lists the valid
  // names, is reported at the field.
  template <typename Parse>
  auto name(const json& obj, const char* key, const std::string& field, Parse parse) const {
    const std::string text = string(obj, key, field);
    try {
      return parse(text);
    } catch (const Error& e) {
      fail(field + "." + key, e.what());
    }
  }
  // A number >= minimum (> minimum when `strict`), or `fallback` when the key is absent.
  double number(const json& obj, const char* key, const std::string& field, double minimum, bool strict,
                std::optional<double> fallback = std::nullopt) const {
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (fallback) return *fallback;
      fail(field + "." + key, "missing");
    }
    if (!it->is_number()) fail(field + "." + key, "expected a number, got " + shown(*it));
    const double v = it->get<double>();
    if (!std::isfinite(v) || v < minimum || (strict && v == minimum))
      fail(field + "." + key, std::string("must be ") + (strict ? "> " : ">= ") + std::to_string(int(minimum)) +
                                  ", got " + shown(*it));
    return v;
  }
  void only_keys(const json& obj, const std::string& field, std::initializer_list<std::string_view> keys) const {
    for (const auto& [key, value] : obj.items()) {
      if (key == "comment" || std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
      fail(field.empty() ? key : field + "." + key,
           "unknown key (valid: " + detail::join_names(keys, [](std::string_view k) { return k; }) + ")");
    }
  }

 private:
  std::string source_;
};

// The optional "gpu" (a name of gpu_table()) and "transport" (ib, roce, tcp) keys.
void read_machine_attributes(const Reader& in, const json& root, Topology& t) {
  if (auto it = root.find("gpu"); it != root.end()) {
    if (!it->is_string()) in.fail("gpu", "expected a string, got " + shown(*it));
    try {
      t.gpu = find_gpu(it->get<std::string>()).name;
    } catch (const Error& e) {
      in.fail("gpu", e.what());
    }
  }
  if (auto it = root.find("transport"); it != root.end()) {
    if (!it->is_string()) in.fail("transport", "expected a string, got " + shown(*it));
    try {
      t.transport = parse_net_transport(it->get<std::string>());
    } catch (const Error& e) {
      in.fail("transport", e.what());
    }
  }
}

void read_header(const Reader& in, const json& root, Topology& t) {
  in.object(root, "(top level)");
  in.only_keys(root, "", {"format", "version", "name", "description", "gpu", "transport", "hosts", "devices", "links",
                          "ranks", "calibration"});
  const json& format = in.required(root, "format", "");
  if (format != std::string(kJsonFormatName))
    in.fail("format", "expected \"" + std::string(kJsonFormatName) + "\", got " + shown(format));
  const json& version = in.required(root, "version", "");
  if (version != 1 && version != kJsonFormatVersion)
    in.fail("version", "unsupported version " + shown(version) + " (this colltune reads versions 1 to " +
                           std::to_string(kJsonFormatVersion) + ")");
  if (auto it = root.find("calibration"); it != root.end()) {
    if (!it->is_object()) in.fail("calibration", "expected an object (written by colltune calibrate), got " + shown(*it));
    t.calibration = it->dump();
  }
  for (const char* key : {"name", "description"}) {
    auto it = root.find(key);
    if (it == root.end()) continue;
    if (!it->is_string()) in.fail(key, "expected a string, got " + shown(*it));
    (std::string_view(key) == "name" ? t.name : t.description) = it->get<std::string>();
  }
  read_machine_attributes(in, root, t);
}

std::unordered_map<std::string, int> read_hosts(const Reader& in, const json& root, Topology& t) {
  std::unordered_map<std::string, int> hosts;
  const json& list = in.array(root, "hosts", "");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string field = "hosts[" + std::to_string(i) + "]";
    if (!list[i].is_string() || list[i].get_ref<const std::string&>().empty())
      in.fail(field, "expected a non-empty host name, got " + shown(list[i]));
    const auto name = list[i].get<std::string>();
    if (!hosts.emplace(name, t.num_hosts()).second) in.fail(field, "duplicate host name \"" + name + "\"");
    t.add_host(name);
  }
  return hosts;
}

// The optional compute_capability (GPUs), nccl_cpu (CPUs) and switch_reduction (switches) of
// device `d`.
void read_device_capabilities(const Reader& in, const json& d, const std::string& field, Device& dev) {
  if (auto cc = d.find("compute_capability"); cc != d.end()) {
    if (!cc->is_number_integer() || cc->get<long long>() < 0 || cc->get<long long>() > 1000)
      in.fail(field + ".compute_capability", "expected an integer 0..1000 (70 V100, 80 A100, 90 H100), got " + shown(*cc));
    dev.compute_capability = cc->get<int>();
  }
  if (d.contains("nccl_cpu")) dev.nccl_cpu = in.name(d, "nccl_cpu", field, parse_nccl_cpu);
  if (d.contains("switch_reduction"))
    dev.switch_reduction = in.name(d, "switch_reduction", field, parse_switch_reduction);
}

std::unordered_map<std::string, VertexId> read_devices(const Reader& in, const json& root, Topology& t,
                                                       const std::unordered_map<std::string, int>& hosts) {
  std::unordered_map<std::string, VertexId> ids;
  const json& list = in.array(root, "devices", "");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string field = "devices[" + std::to_string(i) + "]";
    const json& d = in.object(list[i], field);
    in.only_keys(d, field, {"id", "kind", "host", "reduce_gbps", "compute_capability", "nccl_cpu", "switch_reduction"});
    Device dev;
    dev.id = in.string(d, "id", field);
    dev.kind = in.name(d, "kind", field, parse_device_kind);
    if (auto h = d.find("host"); h != d.end() && !h->is_null()) {
      auto it = h->is_string() ? hosts.find(h->get<std::string>()) : hosts.end();
      if (it == hosts.end()) in.fail(field + ".host", "no such host " + shown(*h) + " in \"hosts\"");
      dev.host = it->second;
    }
    dev.reduce_gbps = in.number(d, "reduce_gbps", field, 0, false, 0.0);
    read_device_capabilities(in, d, field, dev);
    if (ids.count(dev.id)) in.fail(field + ".id", "duplicate device id \"" + dev.id + "\"");
    const std::string id = dev.id;
    ids.emplace(id, t.add_device(std::move(dev)));
  }
  return ids;
}

void read_links(const Reader& in, const json& root, Topology& t, const std::unordered_map<std::string, VertexId>& ids) {
  const json& list = in.array(root, "links", "");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string field = "links[" + std::to_string(i) + "]";
    const json& l = in.object(list[i], field);
    in.only_keys(l, field, {"from", "to", "kind", "bandwidth_gbps", "latency_us", "duplex"});
    VertexId end[2]{};
    const char* keys[2] = {"from", "to"};
    for (int k = 0; k < 2; ++k) {
      const std::string id = in.string(l, keys[k], field);
      auto it = ids.find(id);
      if (it == ids.end()) in.fail(field + "." + keys[k], "no device \"" + id + "\" in \"devices\"");
      end[k] = it->second;
    }
    const LinkKind kind = in.name(l, "kind", field, parse_link_kind);
    const double bw = in.number(l, "bandwidth_gbps", field, 0, true);
    const double lat = in.number(l, "latency_us", field, 0, false);
    const json duplex = l.value("duplex", json(false));
    if (!duplex.is_boolean()) in.fail(field + ".duplex", "expected true or false, got " + shown(duplex));
    // A link from a device to itself carries nothing and would sit in every route search
    // (checked after the fields, so that a field's own error is named first).
    if (end[0] == end[1])
      in.fail(field + ".to", "same device as \"from\" (\"" + in.string(l, "to", field) + "\"): a link joins two devices");
    if (duplex.get<bool>())
      t.add_duplex_link(end[0], end[1], kind, bw, lat);
    else
      t.add_link(end[0], end[1], kind, bw, lat);
  }
}

// Ranks must be exactly 0..N-1 for N entries, each once: repeats and gaps are named here so
// that the message points at the entry (validate() would only see the result).
void read_ranks(const Reader& in, const json& root, Topology& t, const std::unordered_map<std::string, VertexId>& ids) {
  const json& list = in.array(root, "ranks", "");
  if (list.empty()) in.fail("ranks", "no ranks listed (need at least one)");
  std::unordered_map<long long, std::size_t> seen;  // rank -> entry index
  std::vector<std::pair<int, VertexId>> mapping;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string field = "ranks[" + std::to_string(i) + "]";
    const json& r = in.object(list[i], field);
    in.only_keys(r, field, {"rank", "device"});
    const json& rank = in.required(r, "rank", field);
    if (!rank.is_number_integer() || rank.get<long long>() < 0)
      in.fail(field + ".rank", "expected a non-negative integer, got " + shown(rank));
    const long long value = rank.get<long long>();
    if (auto [it, fresh] = seen.emplace(value, i); !fresh)
      in.fail(field + ".rank", "rank " + std::to_string(value) + " mapped twice (also ranks[" +
                                   std::to_string(it->second) + "])");
    const std::string id = in.string(r, "device", field);
    auto dev = ids.find(id);
    if (dev == ids.end()) in.fail(field + ".device", "no device \"" + id + "\" in \"devices\"");
    if (value < static_cast<long long>(list.size())) mapping.emplace_back(static_cast<int>(value), dev->second);
  }
  for (long long r = 0; r < static_cast<long long>(list.size()); ++r)
    if (!seen.count(r))
      in.fail("ranks", "rank " + std::to_string(r) + " is not mapped (" + std::to_string(list.size()) +
                           " entries, so ranks must be 0.." + std::to_string(list.size() - 1) + ")");
  for (const auto& [rank, device] : mapping) t.map_rank(rank, device);
}

}  // namespace

Topology topology_from_json(std::string_view text, const std::string& source) {
  const Reader in(source);
  const json root = json_input::parse(text, source);  // syntax, number range, depth
  Topology t;
  try {
    read_header(in, root, t);
    const auto hosts = read_hosts(in, root, t);
    const auto ids = read_devices(in, root, t, hosts);
    read_links(in, root, t, ids);
    read_ranks(in, root, t, ids);
  } catch (const json::exception& e) {  // a type the reader did not check: still one clear line
    json_input::rethrow(e, source, "");
  }
  return t;
}

}  // namespace colltune::topo

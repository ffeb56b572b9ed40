// NCCL topology XML import (see nccl_xml.hpp for what becomes what). Parsed with
// Boost.PropertyTree; element attributes live under the "<xmlattr>" child.
#include "colltune/topology/nccl_xml.hpp"

#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>

#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/parse.hpp"
#include "colltune/common/limits.hpp"
#include "colltune/topology/hardware.hpp"

namespace colltune::topo {
namespace {

namespace pt = boost::property_tree;

std::optional<std::string> attr(const pt::ptree& node, const std::string& name) {
  if (auto v = node.get_optional<std::string>("<xmlattr>." + name)) return *v;
  return std::nullopt;
}

struct PendingNvlink {
  VertexId gpu;
  int sm;
  VertexId cpu;  // the GPU's CPU, for links to a CPU
  std::string target, tclass, where;
  int count;
};

class XmlImporter {
 public:
  explicit XmlImporter(std::string source) : source_(std::move(source)) {}
  Topology run(const pt::ptree& tree);

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& problem) const {
    throw Error(source_ + ": " + where + ": " + problem);
  }
  int integer(const pt::ptree& node, const std::string& where, const char* name, std::optional<int> fallback) const;
  int host_of(const pt::ptree& cpu);
  std::optional<NcclCpu> nccl_cpu_class(const pt::ptree& cpu, const std::string& where) const;
  void cpu(const pt::ptree& node, const std::string& where, std::size_t index);
  void pci(const pt::ptree& node, const std::string& where, VertexId parent, double parent_gbps);
  void gpu(const pt::ptree& node, const std::string& where, VertexId parent, double gbps, const std::string& busid);
  void nic(const pt::ptree& node, const std::string& where, VertexId parent, double gbps);
  void resolve_nvlinks();
  void map_ranks();

  std::string source_;
  Topology t_;
  int host_ = -1;
  VertexId cpu_ = 0;
  std::map<std::string, int> host_by_hash_;
  std::map<int, std::vector<VertexId>> cpus_of_host_;
  std::map<std::string, VertexId> gpu_by_busid_;
  std::map<int, VertexId> nvswitch_of_host_;
  std::optional<VertexId> fabric_;
  std::vector<PendingNvlink> nvlinks_;
  std::vector<std::pair<std::optional<int>, VertexId>> gpu_ranks_;
};

int XmlImporter::integer(const pt::ptree& node, const std::string& where, const char* name,
                         std::optional<int> fallback) const {
  const std::optional<std::string> text = attr(node, name);
  if (!text) {
    if (fallback) return *fallback;
    fail(where + "@" + name, "missing attribute");
  }
  return parse::integer<int>(*text, source_ + ": " + where + "@" + name);
}

int XmlImporter::host_of(const pt::ptree& node) {
  const std::string hash = attr(node, "host_hash").value_or("");
  auto [it, fresh] = host_by_hash_.emplace(hash, t_.num_hosts());
  if (fresh) t_.add_host("host" + std::to_string(t_.num_hosts()));
  return it->second;
}

// The class NCCL's model gives the CPU, as the build that wrote the dump classed it; none where
// the dump names no x86 family and model (dumps before NCCL wrote them, other architectures).
std::optional<NcclCpu> XmlImporter::nccl_cpu_class(const pt::ptree& node, const std::string& where) const {
  if (attr(node, "arch").value_or("") != "x86_64" || !attr(node, "familyid") || !attr(node, "modelid"))
    return std::nullopt;
  return nccl_cpu_of_dump(attr(node, "vendor").value_or(""), integer(node, where, "familyid", std::nullopt),
                          integer(node, where, "modelid", std::nullopt));
}

void XmlImporter::cpu(const pt::ptree& node, const std::string& where, std::size_t index) {
  host_ = host_of(node);
  const int numa = integer(node, where, "numaid", static_cast<int>(index));
  const std::string id = t_.host_name(host_) + "/cpu" + std::to_string(numa);
  if (t_.find_device(id)) fail(where + "@numaid", "second <cpu> with numaid " + std::to_string(numa) + " on one host");
  const CpuSpec& spec = find_cpu("xeon-8480c");  // NCCL's XML names no CPU model: a DGX H100's
  Device device{id, DeviceKind::cpu, host_, spec.reduce_gbps()};
  device.nccl_cpu = nccl_cpu_class(node, where);
  cpu_ = t_.add_device(std::move(device));
  for (VertexId other : cpus_of_host_[host_])
    t_.add_duplex_link(other, cpu_, LinkKind::sys, spec.socket_link_gbps, hw::kSysLatencyUs);
  cpus_of_host_[host_].push_back(cpu_);
  std::size_t n = 0;
  for (const auto& [tag, child] : node) {
    const std::string at = where + "/" + tag + "[" + std::to_string(n++) + "]";
    if (tag == "pci") pci(child, at, cpu_, 0);
    if (tag == "nic") nic(child, at, cpu_, 0);
  }
}

void XmlImporter::pci(const pt::ptree& node, const std::string& where, VertexId parent, double parent_gbps) {
  const std::string busid = attr(node, "busid").value_or("");
  const std::string at = busid.empty() ? where : where.substr(0, where.rfind('[')) + "[busid=" + busid + "]";
  double gbps = 0;
  try {
    gbps = pcie_link_gbps(attr(node, "link_speed").value_or(""), attr(node, "link_width").value_or(""));
  } catch (const Error& e) {
    fail(at, e.what());
  }
  if (gbps == 0) gbps = parent_gbps > 0 ? parent_gbps : pcie_gbps(4, 16);  // unknown: as upstream
  if (auto g = node.get_child_optional("gpu")) return gpu(*g, at + "/gpu", parent, gbps, busid);
  if (auto n = node.get_child_optional("nic")) return nic(*n, at + "/nic", parent, gbps);
  if (!node.get_child_optional("pci")) return;  // an endpoint we do not model (NVMe, ...)
  const VertexId sw = t_.add_device(Device{t_.host_name(host_) + "/pci" + busid, DeviceKind::pcie_switch, host_, 0});
  t_.add_duplex_link(sw, parent, LinkKind::pcie, gbps, hw::kPcieLatencyUs);
  std::size_t n = 0;
  for (const auto& [tag, child] : node)
    if (tag == "pci") pci(child, at + "/pci[" + std::to_string(n++) + "]", sw, gbps);
}

void XmlImporter::gpu(const pt::ptree& node, const std::string& where, VertexId parent, double gbps,
                      const std::string& busid) {
  const int dev = integer(node, where, "dev", static_cast<int>(gpu_ranks_.size()));
  const int sm = integer(node, where, "sm", std::nullopt);
  const std::string id = t_.host_name(host_) + "/gpu" + std::to_string(dev);
  if (t_.find_device(id)) fail(where + "@dev", "second GPU with dev " + std::to_string(dev) + " on one host");
  // NCCL's XML gives the compute capability, not the board: the table's row for it.
  const VertexId v = t_.add_device(Device{id, DeviceKind::gpu, host_, gpu_of_compute_capability(sm).reduce_gbps(), sm});
  t_.add_duplex_link(v, parent, LinkKind::pcie, gbps, hw::kPcieLatencyUs);
  if (!busid.empty()) gpu_by_busid_[busid] = v;
  std::optional<int> rank;
  if (attr(node, "rank")) rank = integer(node, where, "rank", std::nullopt);
  gpu_ranks_.emplace_back(rank, v);
  std::size_t n = 0;
  for (const auto& [tag, child] : node) {
    if (tag != "nvlink") continue;
    const std::string link_at = where + "/nvlink[" + std::to_string(n++) + "]";
    const int count = integer(child, link_at, "count", std::nullopt);
    if (count <= 0) fail(link_at + "@count", "must be positive, got " + std::to_string(count));
    nvlinks_.push_back(PendingNvlink{v, sm, cpu_, attr(child, "target").value_or(""), attr(child, "tclass").value_or(""),
                                     link_at, count});
  }
}

void XmlImporter::nic(const pt::ptree& node, const std::string& where, VertexId parent, double gbps) {
  std::size_t n = 0;
  for (const auto& [tag, net] : node) {
    if (tag != "net") continue;
    const std::string at = where + "/net[" + std::to_string(n++) + "]";
    const int speed_mbps = integer(net, at, "speed", std::nullopt);
    if (speed_mbps <= 0) fail(at + "@speed", "NIC speed must be positive (Mb/s), got " + std::to_string(speed_mbps));
    const double net_gbps = speed_mbps / 8000.0;
    std::optional<std::string> name = attr(net, "name");
    if (!name) name = "net" + std::to_string(integer(net, at, "dev", static_cast<int>(n - 1)));
    const std::string id = t_.host_name(host_) + "/" + *name;
    if (t_.find_device(id)) fail(at + "@name", "second NIC named '" + *name + "' on one host");
    const VertexId v = t_.add_device(Device{id, DeviceKind::nic, host_, 0});
    t_.add_duplex_link(v, parent, LinkKind::pcie, gbps > 0 ? gbps : net_gbps, hw::kPcieLatencyUs);
    if (!fabric_) fabric_ = t_.add_device(Device{"fabric", DeviceKind::net_switch, -1, 0});
    t_.add_duplex_link(v, *fabric_, LinkKind::net, net_gbps, hw::kNetLatencyUs);
  }
}

// NVSwitch links of one GPU add up into one link to the host's nvswitch vertex. An NVSwitch
// serving Hopper or later GPUs (sm >= 90) reduces in the switch (NVLink SHARP), as NCCL's NVLS
// algorithms find at run time.
void XmlImporter::resolve_nvlinks() {
  std::map<VertexId, double> to_switch;
  for (const PendingNvlink& l : nvlinks_) {
    const double gbps = l.count * nvlink_link_gbps(l.sm);
    if (l.tclass == "0x068000") {
      to_switch[l.gpu] += gbps;
    } else if (l.tclass == "0x060400") {
      t_.add_duplex_link(l.gpu, l.cpu, LinkKind::nvlink, gbps, hw::kNvlinkLatencyUs);
    } else {
      auto it = gpu_by_busid_.find(l.target);
      if (it == gpu_by_busid_.end()) fail(l.where + "@target", "no GPU with busid '" + l.target + "'");
      t_.add_link(l.gpu, it->second, LinkKind::nvlink, gbps, hw::kNvlinkLatencyUs);
    }
  }
  for (const auto& [gpu, gbps] : to_switch) {
    const int host = t_.device(gpu).host;
    auto [it, fresh] = nvswitch_of_host_.emplace(host, VertexId{});
    const bool nvls = t_.device(gpu).compute_capability >= 90;
    if (fresh) {
      it->second = t_.add_device(Device{t_.host_name(host) + "/nvswitch", DeviceKind::nvswitch, host, 0, 0,
                                        nvls ? SwitchReduction::nvls : SwitchReduction::none});
    }
    t_.add_duplex_link(gpu, it->second, LinkKind::nvlink, gbps, hw::kNvlinkLatencyUs);
  }
}

void XmlImporter::map_ranks() {
  std::size_t with_rank = 0;
  for (const auto& [rank, v] : gpu_ranks_) with_rank += rank.has_value();
  if (with_rank != 0 && with_rank != gpu_ranks_.size())
    fail("gpu@rank", std::to_string(with_rank) + " of " + std::to_string(gpu_ranks_.size()) +
                         " GPUs have a rank attribute (all or none must)");
  for (std::size_t i = 0; i < gpu_ranks_.size(); ++i) {
    const int rank = gpu_ranks_[i].first.value_or(static_cast<int>(i));
    if (rank < 0 || rank >= static_cast<int>(gpu_ranks_.size()))
      fail(t_.device(gpu_ranks_[i].second).id + "@rank", "rank " + std::to_string(rank) + " out of range: " +
                                                               std::to_string(gpu_ranks_.size()) + " GPUs, so 0.." +
                                                               std::to_string(gpu_ranks_.size() - 1));
    t_.map_rank(rank, gpu_ranks_[i].second);
  }
}

Topology XmlImporter::run(const pt::ptree& tree) {
  auto system = tree.get_child_optional("system");
  if (!system) fail("system", "no <system> element: not an NCCL topology file");
  std::size_t n = 0;
  for (const auto& [tag, child] : *system) {
    if (tag != "cpu") continue;
    cpu(child, "system/cpu[" + std::to_string(n) + "]", n);
    ++n;
  }
  if (n == 0) fail("system", "no <cpu> elements");
  if (gpu_ranks_.empty()) fail("system", "no <gpu> elements: nothing to map ranks to");
  resolve_nvlinks();
  map_ranks();
  t_.description = "imported from NCCL topology XML " + source_;
  return std::move(t_);
}

// Line of byte `offset` (1-based), for messages.
std::size_t line_of(std::string_view text, std::size_t offset) {
  return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

// Refuses elements nested deeper than limits::kMaxXmlDepth before the (recursive) XML parser and
// the ptree it builds see them. Comments, processing instructions, declarations and CDATA do not
// nest; quoted attribute values may hold '>'. Linear, allocates nothing.
void check_xml_depth(std::string_view text, const std::string& source) {
  int depth = 0;
  for (std::size_t i = text.find('<'); i != std::string_view::npos && i + 1 < text.size(); i = text.find('<', i)) {
    const std::string_view rest = text.substr(i);
    std::string_view close = ">";
    if (rest.starts_with("<!--")) close = "-->";
    else if (rest.starts_with("<![CDATA[")) close = "]]>";
    else if (rest.starts_with("<?")) close = "?>";
    if (close != ">" || rest.starts_with("<!")) {
      const std::size_t end = text.find(close, i + 2);
      if (end == std::string_view::npos) return;  // unterminated: the parser reports it
      i = end + close.size();
      continue;
    }
    const bool closing = rest[1] == '/';
    std::size_t j = i + 1;
    for (char quote = 0; j < text.size() && (quote != 0 || text[j] != '>'); ++j) {
      if (quote == 0 && (text[j] == '"' || text[j] == '\'')) quote = text[j];
      else if (quote != 0 && text[j] == quote) quote = 0;
    }
    const bool self_closing = j < text.size() && text[j - 1] == '/';
    if (closing) --depth;
    else if (!self_closing && ++depth > limits::kMaxXmlDepth)
      throw Error(source + ":" + std::to_string(line_of(text, i)) + ": elements nested deeper than " +
                  std::to_string(limits::kMaxXmlDepth) + " levels (the limit; " + limits::kMaxDepthReason + ")");
    i = j;
  }
}

}  // namespace

double pcie_link_gbps(std::string_view link_speed, std::string_view link_width) {
  // Widths are x1 .. x32; "" and "0" are how a dump says it does not know.
  const int width = link_width.empty() ? 0 : parse::integer<int>(link_width, "link_width", 0, 32);
  if (link_speed.empty() || link_speed.rfind("Unknown", 0) == 0 || width == 0) return 0;
  // "16.0 GT/s PCIe": the rate, then its unit.
  double gts = 0;
  auto [end, ec] = std::from_chars(link_speed.data(), link_speed.data() + link_speed.size(), gts);
  std::string_view unit(end, static_cast<std::size_t>(link_speed.data() + link_speed.size() - end));
  if (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  const bool gt_per_s = unit.empty() || unit.rfind("GT/s", 0) == 0;
  for (const PcieGeneration& g : pcie_generations())
    if (ec == std::errc() && gt_per_s && std::abs(gts - g.gts) < 0.01) return pcie_gbps(g.generation, width);
  parse::refuse("link_speed", link_speed, "is no PCIe generation (2.5, 5, 8, 16, 32 or 64 GT/s)");
}

// NCCL writes its dump as ASCII. A UTF-16 copy (an editor's or PowerShell's "Unicode") would
// otherwise fail inside the parser with an unrelated message ("nested deeper than 64").
void check_xml_encoding(std::string_view text, const std::string& source) {
  const bool utf16_bom = text.starts_with("\xFF\xFE") || text.starts_with("\xFE\xFF");
  if (utf16_bom || text.find('\0') != std::string_view::npos)
    throw Error(source + ": not UTF-8 text (" + (utf16_bom ? "a UTF-16 byte-order mark" : "a NUL byte") +
                "): save it as UTF-8, e.g. iconv -f UTF-16 -t UTF-8");
}

Topology topology_from_nccl_xml(std::string_view text, const std::string& source) {
  check_xml_encoding(text, source);
  check_xml_depth(text, source);
  std::istringstream in{std::string(text)};
  pt::ptree tree;
  try {
    pt::read_xml(in, tree);
  } catch (const pt::xml_parser_error& e) {
    throw Error(source + ":" + std::to_string(e.line()) + ": XML parse error: " + e.message());
  }
  return XmlImporter(source).run(tree);
}

Topology load_nccl_xml(const std::filesystem::path& path) { return topology_from_nccl_xml(read_file(path), path.string()); }

}  // namespace colltune::topo

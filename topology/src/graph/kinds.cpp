// Names of device and link kinds, as they appear in the JSON format and in messages.
#include <array>
#include <string>
#include <utility>

#include "colltune/common/error.hpp"
#include "colltune/topology/topology.hpp"
#include "graph/text_util.hpp"

namespace colltune::topo {
namespace {

constexpr std::array<std::pair<DeviceKind, std::string_view>, 6> kDeviceNames{{
    {DeviceKind::gpu, "gpu"},
    {DeviceKind::cpu, "cpu"},
    {DeviceKind::nic, "nic"},
    {DeviceKind::nvswitch, "nvswitch"},
    {DeviceKind::pcie_switch, "pcie_switch"},
    {DeviceKind::net_switch, "net_switch"},
}};

constexpr std::array<std::pair<LinkKind, std::string_view>, 5> kLinkNames{{
    {LinkKind::nvlink, "nvlink"},
    {LinkKind::pcie, "pcie"},
    {LinkKind::net, "net"},
    {LinkKind::shm, "shm"},
    {LinkKind::sys, "sys"},
}};

constexpr std::array<std::pair<SwitchReduction, std::string_view>, 3> kSwitchReductionNames{{
    {SwitchReduction::none, "none"},
    {SwitchReduction::nvls, "nvls"},
    {SwitchReduction::sharp, "sharp"},
}};

constexpr std::array<std::pair<NcclCpu, std::string_view>, 7> kNcclCpuNames{{
    {NcclCpu::intel_bdw, "intel_bdw"},
    {NcclCpu::intel_skl, "intel_skl"},
    {NcclCpu::intel_srp, "intel_srp"},
    {NcclCpu::intel_erp, "intel_erp"},
    {NcclCpu::amd, "amd"},
    {NcclCpu::amd_zen34, "amd_zen34"},
    {NcclCpu::amd_zen5, "amd_zen5"},
}};

constexpr std::array<std::pair<NetTransport, std::string_view>, 3> kTransportNames{{
    {NetTransport::ib, "ib"},
    {NetTransport::roce, "roce"},
    {NetTransport::tcp, "tcp"},
}};

template <typename Table>
std::string_view name_in(const Table& table, typename Table::value_type::first_type kind) {
  for (const auto& [k, name] : table)
    if (k == kind) return name;
  return "?";
}

// `what` ("device kind") names the table in the error, which lists the valid names.
template <typename Table>
auto parse_in(const Table& table, std::string_view name, const char* what) {
  for (const auto& [kind, n] : table)
    if (n == name) return kind;
  throw Error("unknown " + std::string(what) + " '" + std::string(name) + "' (valid: " +
              detail::join_names(table, [](const auto& entry) { return entry.second; }) + ")");
}

}  // namespace

std::string_view to_string(DeviceKind kind) { return name_in(kDeviceNames, kind); }
std::string_view to_string(LinkKind kind) { return name_in(kLinkNames, kind); }
DeviceKind parse_device_kind(std::string_view name) { return parse_in(kDeviceNames, name, "device kind"); }
LinkKind parse_link_kind(std::string_view name) { return parse_in(kLinkNames, name, "link kind"); }
std::string_view to_string(SwitchReduction reduction) { return name_in(kSwitchReductionNames, reduction); }
SwitchReduction parse_switch_reduction(std::string_view name) {
  return parse_in(kSwitchReductionNames, name, "switch reduction");
}

std::string_view to_string(NetTransport transport) { return name_in(kTransportNames, transport); }
NetTransport parse_net_transport(std::string_view name) { return parse_in(kTransportNames, name, "network transport"); }

std::string_view to_string(NcclCpu cpu) { return name_in(kNcclCpuNames, cpu); }
NcclCpu parse_nccl_cpu(std::string_view name) { return parse_in(kNcclCpuNames, name, "CPU class for NCCL's model"); }

std::optional<NcclCpu> nccl_cpu_of_cpuid(std::string_view vendor, int family, int model) {
  if (vendor == "GenuineIntel") {
    if (family != 6 || model < 0x55) return NcclCpu::intel_bdw;
    return model >= 0xCF ? NcclCpu::intel_erp : model >= 0x8F ? NcclCpu::intel_srp : NcclCpu::intel_skl;
  }
  if (vendor == "AuthenticAMD") return NcclCpu::amd;
  return std::nullopt;
}

std::optional<NcclCpu> nccl_cpu_of_dump(std::string_view vendor, int family_id, int model_id) {
  constexpr int kLargestCpuidFamily = 30;  // above: written as base + (extended << 4), before the detection
  if (vendor != "AuthenticAMD" || family_id > kLargestCpuidFamily)
    return nccl_cpu_of_cpuid(vendor, family_id, model_id);
  return family_id >= 26 ? NcclCpu::amd_zen5 : family_id == 25 ? NcclCpu::amd_zen34 : NcclCpu::amd;
}

}  // namespace colltune::topo

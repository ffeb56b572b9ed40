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

}  // namespace colltune::topo

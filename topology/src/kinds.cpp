// Names of device and link kinds, as they appear in the JSON format and in messages.
#include <array>
#include <string>
#include <utility>

#include "colltune/common/error.hpp"
#include "colltune/topology/topology.hpp"

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

template <typename Table>
std::string valid_names(const Table& table) {
  std::string out;
  for (const auto& [kind, name] : table) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

}  // namespace

std::string_view to_string(DeviceKind kind) {
  for (const auto& [k, name] : kDeviceNames)
    if (k == kind) return name;
  return "?";
}

std::string_view to_string(LinkKind kind) {
  for (const auto& [k, name] : kLinkNames)
    if (k == kind) return name;
  return "?";
}

DeviceKind parse_device_kind(std::string_view name) {
  for (const auto& [kind, n] : kDeviceNames)
    if (n == name) return kind;
  throw Error("unknown device kind '" + std::string(name) + "' (valid: " + valid_names(kDeviceNames) + ")");
}

LinkKind parse_link_kind(std::string_view name) {
  for (const auto& [kind, n] : kLinkNames)
    if (n == name) return kind;
  throw Error("unknown link kind '" + std::string(name) + "' (valid: " + valid_names(kLinkNames) + ")");
}

}  // namespace colltune::topo

// Probes of this machine (detect.hpp): CPU sockets and cores from hwloc, or from sysfs and
// /proc/cpuinfo where colltune was built without hwloc; NICs from sysfs; the socket this
// process is bound to.
#include <sched.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "colltune/common/parse.hpp"
#include "colltune/topology/detect.hpp"
#ifdef COLLTUNE_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace colltune::topo {
namespace fs = std::filesystem;
namespace {

std::string first_line(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// Far beyond any machine's CPU count: a list reaching it is garbage, not a machine.
constexpr int kMaxCpus = 1 << 20;

// "0-3,8,10-11" (sysfs cpu lists) -> {0,1,2,3,8,10,11}.
std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> cpus;
  std::istringstream in(text);
  for (std::string range; std::getline(in, range, ',');) {
    if (range.empty()) continue;
    const auto dash = range.find('-');
    const std::optional<int> lo = parse::try_integer<int>(std::string_view(range).substr(0, dash));
    const std::optional<int> hi = dash == std::string::npos ? lo : parse::try_integer<int>(std::string_view(range).substr(dash + 1));
    if (!lo || !hi || *lo < 0 || *hi < *lo || *hi >= kMaxCpus) return {};  // unreadable: treated as absent
    for (int c = *lo; c <= *hi; ++c) cpus.push_back(c);
  }
  return cpus;
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
  }
  return "";
}

// CPUID vendor, family and model of the first CPU in /proc/cpuinfo ("vendor_id", "cpu family",
// "model"); empty and zeros where it does not say.
struct Cpuid {
  std::string vendor;
  int family = 0;
  int model = 0;
};
Cpuid cpuid_from_cpuinfo() {
  Cpuid id;
  std::ifstream in("/proc/cpuinfo");
  const auto value = [](const std::string& line) {
    const auto colon = line.find(':');
    const auto start = colon == std::string::npos ? std::string::npos : line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? std::string() : line.substr(start);
  };
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) break;  // the end of the first processor's block
    if (line.rfind("vendor_id", 0) == 0) id.vendor = value(line);
    if (line.rfind("cpu family", 0) == 0) id.family = parse::try_integer<int>(value(line)).value_or(0);
    if (line.rfind("model", 0) == 0 && line.rfind("model name", 0) != 0)
      id.model = parse::try_integer<int>(value(line)).value_or(0);
  }
  return id;
}

CpuSocket socket_of(int cores, const std::string& model, const Cpuid& id) {
  return CpuSocket{cores, model, id.vendor, id.family, id.model};
}

int read_int(const fs::path& path, int fallback) {
  return parse::try_integer<int>(first_line(path)).value_or(fallback);
}

// Online CPU -> socket index (packages numbered in the order of their sysfs ids).
std::map<int, int> cpu_sockets_from_sysfs() {
  std::map<int, int> package_of;
  for (int cpu : parse_cpu_list(first_line("/sys/devices/system/cpu/online"))) {
    const fs::path topo = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology";
    package_of[cpu] = std::max(0, read_int(topo / "physical_package_id", 0));
  }
  std::set<int> ids;
  for (const auto& [cpu, id] : package_of) ids.insert(id);
  std::map<int, int> socket_of;
  for (const auto& [cpu, id] : package_of) socket_of[cpu] = static_cast<int>(std::distance(ids.begin(), ids.find(id)));
  return socket_of;
}

// "mlx5_2" before "mlx5_10": names by their text, then by their trailing number.
bool natural_less(const std::string& a, const std::string& b) {
  auto split = [](const std::string& s) {
    const auto d = s.find_last_not_of("0123456789") + 1;
    return std::pair{s.substr(0, d), parse::try_integer<long long>(std::string_view(s).substr(d)).value_or(-1LL)};
  };
  return split(a) < split(b);
}

}  // namespace

CpuProbe probe_cpus_sysfs() {
  std::map<int, std::set<int>> cores_of;  // socket -> core ids
  for (const auto& [cpu, socket] : cpu_sockets_from_sysfs())
    cores_of[socket].insert(read_int("/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/core_id", cpu));
  CpuProbe out;
  out.source = "/proc/cpuinfo + sysfs";
  const std::string model = cpu_model_name();
  const Cpuid id = cpuid_from_cpuinfo();
  for (const auto& [socket, cores] : cores_of)
    out.sockets.push_back(socket_of(static_cast<int>(cores.size()), model, id));
  if (out.sockets.empty()) {  // no sysfs (a container hiding it): one socket of the CPUs we may use
    const int n = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    out.sockets.push_back(socket_of(n, model, id));
    out.source = "std::thread::hardware_concurrency (no sysfs CPU topology)";
  }
  return out;
}

bool built_with_hwloc() {
#ifdef COLLTUNE_HAVE_HWLOC
  return true;
#else
  return false;
#endif
}

#ifdef COLLTUNE_HAVE_HWLOC
namespace {

std::string hwloc_version() {
  const unsigned v = hwloc_get_api_version();
  return std::to_string(v >> 16) + "." + std::to_string((v >> 8) & 0xff) + "." + std::to_string(v & 0xff);
}

// A package's CPUID as hwloc reports it (CPUVendor, CPUFamilyNumber, CPUModelNumber on x86).
Cpuid cpuid_of_package(hwloc_obj_t pkg) {
  const auto info = [&](const char* name) {
    const char* v = hwloc_obj_get_info_by_name(pkg, name);
    return std::string(v != nullptr ? v : "");
  };
  Cpuid id;
  id.vendor = info("CPUVendor");
  id.family = parse::try_integer<int>(info("CPUFamilyNumber")).value_or(0);
  id.model = parse::try_integer<int>(info("CPUModelNumber")).value_or(0);
  return id;
}

CpuProbe probe_cpus_hwloc() {
  hwloc_topology_t topo = nullptr;
  if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0) {
    if (topo != nullptr) hwloc_topology_destroy(topo);
    CpuProbe out = probe_cpus_sysfs();
    out.source += " (hwloc failed to load the machine's topology)";
    return out;
  }
  CpuProbe out;
  out.source = "hwloc " + hwloc_version();
  const int packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
  for (int p = 0; p < packages; ++p) {
    hwloc_obj_t pkg = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, static_cast<unsigned>(p));
    const char* model = hwloc_obj_get_info_by_name(pkg, "CPUModel");
    const int cores = hwloc_get_nbobjs_inside_cpuset_by_type(topo, pkg->cpuset, HWLOC_OBJ_CORE);
    out.sockets.push_back(socket_of(std::max(1, cores), model != nullptr ? model : "", cpuid_of_package(pkg)));
  }
  if (out.sockets.empty())  // no package objects (some virtual machines): the whole machine is one
    out.sockets.push_back(
        socket_of(std::max(1, hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE)), cpu_model_name(), cpuid_from_cpuinfo()));
  hwloc_topology_destroy(topo);
  return out;
}

}  // namespace
#endif

CpuProbe probe_cpus() {
#ifdef COLLTUNE_HAVE_HWLOC
  return probe_cpus_hwloc();
#else
  CpuProbe out = probe_cpus_sysfs();
  out.source += " (built without hwloc)";
  return out;
#endif
}

int socket_of_this_process() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
  const std::map<int, int> socket_of = cpu_sockets_from_sysfs();
  int socket = -1;
  for (const auto& [cpu, s] : socket_of) {
    if (!CPU_ISSET(cpu, &set)) continue;
    if (socket >= 0 && s != socket) return -1;
    socket = s;
  }
  return socket;
}

namespace {

// The socket of a PCI device: its NUMA node's first CPU's socket; -1 when sysfs does not say.
int socket_of_device(const fs::path& device, const std::map<int, int>& socket_of) {
  const int node = read_int(device / "numa_node", -1);
  if (node < 0) return -1;
  const std::vector<int> cpus =
      parse_cpu_list(first_line("/sys/devices/system/node/node" + std::to_string(node) + "/cpulist"));
  if (cpus.empty() || socket_of.count(cpus.front()) == 0) return -1;
  return socket_of.at(cpus.front());
}

// "200 Gb/sec (4X HDR)" -> 25 GB/s; 0 when unreadable.
double ib_rate_gbps(const std::string& rate) {
  const std::optional<double> gbit = parse::try_number(std::string_view(rate).substr(0, rate.find(' ')));
  return gbit && *gbit > 0 ? *gbit / 8.0 : 0;
}

}  // namespace

NicProbe probe_nics() {
  NicProbe out;
  const std::map<int, int> socket_of = cpu_sockets_from_sysfs();
  std::set<std::string> rdma_netdevs;  // Ethernet interfaces of RDMA devices (RoCE): not listed twice
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/sys/class/infiniband", ec)) {
    const fs::path port = e.path() / "ports" / "1";
    NicInfo nic{e.path().filename().string(), ib_rate_gbps(first_line(port / "rate")),
                socket_of_device(e.path() / "device", socket_of), first_line(port / "link_layer")};
    for (const auto& n : fs::directory_iterator(e.path() / "device" / "net", ec))
      rdma_netdevs.insert(n.path().filename());
    out.nics.push_back(std::move(nic));
  }
  if (!out.nics.empty()) {
    out.source = "/sys/class/infiniband";
  } else {  // no RDMA device: the physical Ethernet interfaces that are up
    for (const auto& e : fs::directory_iterator("/sys/class/net", ec)) {
      const std::string name = e.path().filename();
      if (!fs::exists(e.path() / "device") || read_int(e.path() / "type", 0) != 1 ||
          first_line(e.path() / "operstate") != "up" || rdma_netdevs.count(name) != 0)
        continue;
      const int mbits = read_int(e.path() / "speed", -1);
      out.nics.push_back(
          NicInfo{name, mbits > 0 ? mbits / 8000.0 : 0, socket_of_device(e.path() / "device", socket_of), "Ethernet"});
    }
    out.source = "/sys/class/net";
  }
  std::sort(out.nics.begin(), out.nics.end(),
            [](const NicInfo& a, const NicInfo& b) { return natural_less(a.name, b.name); });
  return out;
}

}  // namespace colltune::topo

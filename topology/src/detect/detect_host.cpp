// detect_host(): this machine's description (detect.hpp), and its JSON form, which is what each
// MPI rank sends to rank 0.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/json_input.hpp"
#include "colltune/topology/detect.hpp"
#include "graph/text_util.hpp"

namespace colltune::topo {
namespace {

using json = nlohmann::json;

struct CommandResult {
  int status = -1;  // exit status; 124 = timed out (coreutils timeout)
  std::string output;
};

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::filesystem::path candidate = std::filesystem::path(dirs.substr(start, end - start)) / program;
    if (::access(candidate.c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

// Runs `command` through the shell under coreutils `timeout`: nvidia-smi can hang for minutes on a
// GPU in a bad state, and every wait in colltune has a limit.
CommandResult run_command(const std::string& command, double timeout_s) {
  // stderr is not captured: a diagnostic nvidia-smi prints on success must not land inside the
  // text the parsers read (a failure is reported by its exit status).
  const std::string line = "timeout -k 5 " + detail::fmt_num(timeout_s) + " " + command + " 2>/dev/null";
  FILE* pipe = ::popen(line.c_str(), "r");
  if (pipe == nullptr) return {};
  CommandResult r;
  std::array<char, 4096> buf{};
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0;) r.output.append(buf.data(), n);
  const int status = ::pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string first_line_of(const std::string& text) { return text.substr(0, text.find('\n')); }

std::string this_hostname() {
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0) return "localhost";
  return name.data();
}

// GPUs from captured files or from nvidia-smi; sets gpu_source, adds warnings.
void probe_gpus(HostDescription& h, const GpuProbe& probe) {
  std::string topo_text, query_text, topo_src, query_src;
  if (!probe.topo_file.empty() || !probe.query_file.empty()) {
    if (probe.topo_file.empty() || probe.query_file.empty())
      throw Error("--gpu-topo and --gpu-query go together (the matrix and the GPU list of one machine)");
    topo_text = read_file(probe.topo_file);
    query_text = read_file(probe.query_file);
    topo_src = probe.topo_file;
    query_src = probe.query_file;
    h.gpu_source = "files " + probe.topo_file + ", " + probe.query_file;
  } else {
    if (!on_path("nvidia-smi")) {
      h.gpu_source = "none: nvidia-smi not found";
      return;
    }
    const CommandResult q =
        run_command("nvidia-smi --query-gpu=name,pci.bus_id,compute_cap --format=csv,noheader", probe.timeout_s);
    const CommandResult t = q.status == 0 ? run_command("nvidia-smi topo -m", probe.timeout_s) : q;
    if (q.status != 0 || t.status != 0) {
      const CommandResult& bad = q.status != 0 ? q : t;
      h.gpu_source = "none: nvidia-smi failed";
      h.warnings.push_back("nvidia-smi " + std::string(bad.status == 124 ? "timed out" : "failed") + " (exit status " +
                           std::to_string(bad.status) + "): " + first_line_of(bad.output) + "; detecting CPUs only");
      return;
    }
    topo_text = t.output;
    query_text = q.output;
    topo_src = "nvidia-smi topo -m";
    query_src = "nvidia-smi --query-gpu";
    h.gpu_source = "nvidia-smi";
  }
  h.gpus = parse_nvidia_smi_gpus(query_text, query_src);
  if (h.gpus.empty()) return;
  h.matrix = parse_nvidia_smi_topo(topo_text, topo_src);
  if (h.matrix.gpus.size() != h.gpus.size())
    throw Error(topo_src + ": " + std::to_string(h.matrix.gpus.size()) + " GPUs in the matrix, but " + query_src +
                " lists " + std::to_string(h.gpus.size()));
  for (const GpuInfo& g : h.gpus)
    if (g.compute_capability == 0)
      h.warnings.push_back("GPU '" + g.name + "' (" + g.bus_id +
                           "): nvidia-smi gives no compute capability; its figures are Pascal-class defaults");
}

json matrix_json(const GpuTopoMatrix& m) {
  json cells = json::array();
  for (const auto& row : m.cells) {
    json r = json::array();
    for (const PathCell& c : row) r.push_back({static_cast<int>(c.path), c.nvlinks});
    cells.push_back(r);
  }
  return {{"gpus", m.gpus}, {"nics", m.nics}, {"cells", cells}};
}

GpuTopoMatrix matrix_from_json(const json& j, const std::string& source) {
  GpuTopoMatrix m;
  m.gpus = j.at("gpus").get<std::vector<std::string>>();
  m.nics = j.at("nics").get<std::vector<std::string>>();
  const std::size_t n = m.gpus.size() + m.nics.size();  // a square matrix over GPUs and NICs
  if (j.at("cells").size() != n)
    throw Error(source + ": host description: matrix has " + std::to_string(j.at("cells").size()) + " rows, expected " +
                std::to_string(n));
  for (const json& row : j.at("cells")) {
    if (row.size() != n)
      throw Error(source + ": host description: matrix row of " + std::to_string(row.size()) + " cells, expected " +
                  std::to_string(n));
    m.cells.emplace_back();
    for (const json& c : row) {
      const int path = c.at(0).get<int>();
      if (path < 0 || path > static_cast<int>(PathClass::unknown))
        throw Error(source + ": host description: bad path class " + std::to_string(path));
      m.cells.back().push_back(PathCell{static_cast<PathClass>(path), c.at(1).get<int>()});
    }
  }
  return m;
}

}  // namespace

std::string to_json(const HostDescription& h) {
  json j;
  j["hostname"] = h.hostname;
  j["sockets"] = json::array();
  for (const CpuSocket& s : h.sockets) j["sockets"].push_back({{"cores", s.cores}, {"model", s.model}});
  j["cpu_source"] = h.cpu_source;
  j["gpus"] = json::array();
  for (const GpuInfo& g : h.gpus)
    j["gpus"].push_back({{"name", g.name}, {"bus_id", g.bus_id}, {"cc", g.compute_capability}});
  j["matrix"] = matrix_json(h.matrix);
  j["gpu_source"] = h.gpu_source;
  j["nics"] = json::array();
  for (const NicInfo& n : h.nics)
    j["nics"].push_back({{"name", n.name}, {"gbps", n.gbps}, {"socket", n.socket}, {"link_layer", n.link_layer}});
  j["nic_source"] = h.nic_source;
  j["warnings"] = h.warnings;
  return j.dump();
}

HostDescription host_description_from_json(std::string_view text, const std::string& source) {
  const json j = json_input::parse(text, source);  // bounded nesting, one-line syntax errors
  try {
    HostDescription h;
    h.hostname = j.at("hostname").get<std::string>();
    for (const json& s : j.at("sockets"))
      h.sockets.push_back({s.at("cores").get<int>(), s.at("model").get<std::string>()});
    h.cpu_source = j.at("cpu_source").get<std::string>();
    for (const json& g : j.at("gpus"))
      h.gpus.push_back({g.at("name").get<std::string>(), g.at("bus_id").get<std::string>(), g.at("cc").get<int>()});
    h.matrix = matrix_from_json(j.at("matrix"), source);
    h.gpu_source = j.at("gpu_source").get<std::string>();
    for (const json& n : j.at("nics"))
      h.nics.push_back({n.at("name").get<std::string>(), n.at("gbps").get<double>(), n.at("socket").get<int>(),
                        n.at("link_layer").get<std::string>()});
    h.nic_source = j.at("nic_source").get<std::string>();
    h.warnings = j.at("warnings").get<std::vector<std::string>>();
    return h;
  } catch (const json::exception& e) {
    json_input::rethrow(e, source, "host description");
  }
}

HostDescription detect_host(const GpuProbe& probe) {
  HostDescription h;
  h.hostname = this_hostname();
  CpuProbe cpus = probe_cpus();
  h.sockets = std::move(cpus.sockets);
  h.cpu_source = std::move(cpus.source);
  NicProbe nics = probe_nics();
  h.nics = std::move(nics.nics);
  h.nic_source = std::move(nics.source);
  probe_gpus(h, probe);
  return h;
}

}  // namespace colltune::topo

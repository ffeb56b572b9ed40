// detect_host(): this machine's description (detect.hpp), and its JSON form, which is what each
// MPI rank sends to rank 0.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/json_input.hpp"
#include "colltune/topology/detect.hpp"
#include "graph/text_util.hpp"

namespace colltune::topo {
namespace {

using json = nlohmann::json;

struct CommandResult {
  int status = -1;  // exit status; 124 = timed out (as coreutils timeout says it)
  std::string output;
};
constexpr int kTimedOut = 124;

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

// The child: its own process group (so the timeout can kill it with everything it started),
// stdout into the pipe, stderr to /dev/null (a diagnostic nvidia-smi prints on success must not
// land inside the text the parsers read; a failure is reported by its exit status).
[[noreturn]] void exec_child(const std::string& command, int out_fd) {
  ::setpgid(0, 0);
  ::dup2(out_fd, STDOUT_FILENO);
  if (const int null = ::open("/dev/null", O_WRONLY); null >= 0) ::dup2(null, STDERR_FILENO);
  ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
  ::_exit(127);
}

// Reads `fd` until end of file or `deadline`; false when the deadline came first.
bool read_until(int fd, std::chrono::steady_clock::time_point deadline, std::string& out) {
  std::array<char, 4096> buf{};
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) return true;
    if (ready <= 0) continue;
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    out.append(buf.data(), static_cast<std::size_t>(n));
  }
}

// The child's wait status once it exits, or nullopt at `deadline`.
std::optional<int> wait_until(pid_t pid, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return status;
    if (done < 0 && errno != EINTR) return -1;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    ::usleep(10'000);
  }
}

// Runs `command` through the shell with a limit: nvidia-smi can hang for minutes on a GPU in a
// bad state, and every wait in colltune has one. At the limit the command's whole process group
// is killed and its output is no longer waited for, so a child it left running (even one in a
// session of its own, still holding the pipe) cannot hold colltune past the limit.
CommandResult run_command(const std::string& command, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(timeout_s));
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {};
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return {};
  }
  if (pid == 0) exec_child(command, fds[1]);
  ::setpgid(pid, pid);  // also here: the group exists before the parent may signal it
  ::close(fds[1]);
  CommandResult r;
  const bool finished = read_until(fds[0], deadline, r.output);
  ::close(fds[0]);
  const std::optional<int> status = finished ? wait_until(pid, deadline) : std::nullopt;
  if (!status) {
    ::kill(-pid, SIGKILL);
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    r.status = kTimedOut;
  } else {
    r.status = WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
  }
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
      h.warnings.push_back("nvidia-smi " + std::string(bad.status == kTimedOut ? "timed out" : "failed") + " (exit status " +
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
  for (const CpuSocket& s : h.sockets)
    j["sockets"].push_back({{"cores", s.cores},
                            {"model", s.model},
                            {"vendor", s.vendor},
                            {"family", s.family},
                            {"model_number", s.model_number}});
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
    for (const json& s : j.at("sockets"))  // vendor, family, model_number: absent before they were probed
      h.sockets.push_back({s.at("cores").get<int>(), s.at("model").get<std::string>(), s.value("vendor", ""),
                           s.value("family", 0), s.value("model_number", 0)});
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

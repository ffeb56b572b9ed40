// colltune topo detect: the machines of the current job as a topology (docs/topologies.md,
// "Detecting a topology"). Under mpirun every host is described by its first rank and rank 0
// writes one file; without MPI, this machine with one rank per GPU (or per physical core).
#include <chrono>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"
#include "colltune/common/units.hpp"
#include "colltune/topology/detect.hpp"
#include "colltune/topology/json_io.hpp"
#include "commands.hpp"
#include "options/options.hpp"
#include "options/output_guard.hpp"
#ifdef COLLTUNE_HAVE_MPI
#include "colltune/collectives/mpi.hpp"
#endif

namespace colltune::cli {
namespace {

struct DetectArgs {
  std::string output;
  int ranks_per_host = 0;
  std::string timeout = "30s";
  topo::GpuProbe probe;
};

int total_cores(const topo::HostDescription& d) {
  int n = 0;
  for (const topo::CpuSocket& s : d.sockets) n += s.cores;
  return n;
}

// This machine alone: ranks = --ranks-per-host, else its GPUs, else its physical cores.
std::vector<topo::DetectedHost> detect_single(const DetectArgs& a) {
  topo::DetectedHost h{topo::detect_host(a.probe), {}, {}};
  const int gpus = static_cast<int>(h.description.gpus.size());
  const int ranks = a.ranks_per_host > 0 ? a.ranks_per_host : gpus > 0 ? gpus : total_cores(h.description);
  for (int r = 0; r < ranks; ++r) h.ranks.push_back(r);
  return {h};
}

#ifdef COLLTUNE_HAVE_MPI
// Completes `request` or throws TimeoutError: a rank that never arrives must not hang the job.
void wait_for(MPI_Request& request, double timeout_s, const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (int done = 0;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done != 0) return;
    if (std::chrono::steady_clock::now() > deadline)
      throw TimeoutError("topo detect: " + what + " timed out after " + std::to_string(static_cast<long>(timeout_s)) +
                         " s");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// Every rank's hostname (MPI_Get_processor_name) and socket, on every rank.
struct RankPlaces {
  std::vector<std::string> hosts;
  std::vector<int> sockets;
};

RankPlaces gather_places(int size, double timeout_s) {
  std::vector<char> mine(MPI_MAX_PROCESSOR_NAME, '\0');
  int len = 0;
  MPI_Get_processor_name(mine.data(), &len);
  std::vector<char> all(static_cast<std::size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Iallgather(mine.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                 MPI_COMM_WORLD, &req);
  wait_for(req, timeout_s, "gathering host names");
  RankPlaces p;
  p.sockets.resize(static_cast<std::size_t>(size));
  int socket = topo::socket_of_this_process();
  MPI_Iallgather(&socket, 1, MPI_INT, p.sockets.data(), 1, MPI_INT, MPI_COMM_WORLD, &req);
  wait_for(req, timeout_s, "gathering rank sockets");
  for (int r = 0; r < size; ++r) {
    // A name may fill its whole slot without a terminating NUL: bounded by the slot.
    const char* name = all.data() + static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME;
    p.hosts.emplace_back(name, ::strnlen(name, MPI_MAX_PROCESSOR_NAME));
  }
  return p;
}

// Rank 0 receives every rank's text (empty from ranks that describe no host).
std::vector<std::string> gather_text(const std::string& text, int rank, int size, double timeout_s) {
  int len = static_cast<int>(text.size());
  std::vector<int> lens(static_cast<std::size_t>(size)), offsets(static_cast<std::size_t>(size));
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Igather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
  wait_for(req, timeout_s, "gathering host descriptions");
  for (int r = 1; r < size; ++r) offsets[r] = offsets[r - 1] + lens[r - 1];
  std::string all(rank == 0 ? static_cast<std::size_t>(offsets.back() + lens.back()) : 0, '\0');
  MPI_Igatherv(text.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD, &req);
  wait_for(req, timeout_s, "gathering host descriptions");
  std::vector<std::string> out;
  if (rank == 0)
    for (int r = 0; r < size; ++r) out.push_back(all.substr(offsets[r], lens[r]));
  return out;
}

// Hosts in order of their first rank; each described by that rank.
std::vector<topo::DetectedHost> group_hosts(const RankPlaces& p, const std::vector<std::string>& texts) {
  std::vector<topo::DetectedHost> hosts;
  std::map<std::string, std::size_t> index;
  for (std::size_t r = 0; r < p.hosts.size(); ++r) {
    auto [it, fresh] = index.emplace(p.hosts[r], hosts.size());
    if (fresh) hosts.push_back({topo::host_description_from_json(texts[r], "rank " + std::to_string(r)), {}, {}});
    hosts[it->second].ranks.push_back(static_cast<int>(r));
    hosts[it->second].rank_sockets.push_back(p.sockets[r]);
  }
  return hosts;
}

// Every rank: where it runs; the first rank of each host: that host's description. Rank 0
// returns the hosts; the others nothing. An error on any rank ends the job (its peers wait).
std::optional<std::vector<topo::DetectedHost>> detect_mpi(const DetectArgs& a) {
  std::optional<std::vector<topo::DetectedHost>> hosts;
  coll::MpiSession session(nullptr, nullptr);
  try {
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const double wait_s = 3 * a.probe.timeout_s + 60;  // a peer may run nvidia-smi twice first
    const RankPlaces places = gather_places(size, wait_s);
    bool first_on_host = true;
    for (int r = 0; r < rank; ++r) first_on_host = first_on_host && places.hosts[r] != places.hosts[rank];
    const std::string text = first_on_host ? topo::to_json(topo::detect_host(a.probe)) : "";
    const std::vector<std::string> texts = gather_text(text, rank, size, wait_s);
    if (rank == 0) hosts = group_hosts(places, texts);
  } catch (const std::exception& e) {
    std::cerr << "colltune: " << (exit_status(e) == kExitInternal ? "internal error: " : "error: ") << e.what()
              << std::endl;
    MPI_Abort(MPI_COMM_WORLD, exit_status(e));
  }
  return hosts;
}
#endif

std::optional<std::vector<topo::DetectedHost>> detect_hosts(const DetectArgs& a) {
  if (!under_mpi_launcher()) return detect_single(a);
#ifdef COLLTUNE_HAVE_MPI
  if (a.ranks_per_host > 0)
    throw Error("--ranks-per-host: under mpirun each host has the ranks mpirun started there; drop the option");
  return detect_mpi(a);
#else
  std::cerr << "colltune: warning: started by an MPI launcher, but this colltune was built without MPI: "
               "describing this machine only"
            << std::endl;
  return detect_single(a);
#endif
}

// The NICs the topology gives host `host` (sysfs's and nvidia-smi's, or the default one).
int nics_of(const topo::Topology& t, int host) {
  int n = 0;
  for (topo::VertexId v = 0; v < t.num_devices(); ++v)
    n += t.device(v).kind == topo::DeviceKind::nic && t.device(v).host == host ? 1 : 0;
  return n;
}

std::string summary(const std::vector<topo::DetectedHost>& hosts, const topo::Topology& t) {
  std::string out = "detected " + std::to_string(hosts.size()) + " host(s), " + std::to_string(t.num_ranks()) +
                    " rank(s) (" + (under_mpi_launcher() ? "from the MPI job" : "this machine, no MPI") + ")\n";
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    const topo::DetectedHost& h = hosts[i];
    const topo::HostDescription& d = h.description;
    out += "  " + d.hostname + ": " + std::to_string(h.ranks.size()) + " rank(s); " + std::to_string(d.sockets.size()) +
           " socket(s), " + std::to_string(total_cores(d)) + " core(s) from " + d.cpu_source + "; " +
           std::to_string(d.gpus.size()) + " GPU(s) from " + d.gpu_source + "; " +
           std::to_string(nics_of(t, static_cast<int>(i))) + " NIC(s) from " +
           (d.matrix.nics.empty() ? d.nic_source : "nvidia-smi + " + d.nic_source) + "\n";
    for (const std::string& w : d.warnings) out += "    warning: " + w + "\n";
  }
  out += "figures are defaults: calibrate them with colltune calibrate\n";
  return out;
}

void run_detect(const DetectArgs& a) {
  OutputFiles files;  // -o, checked before the probes run (by the process that writes it)
  if (!a.output.empty() && launch_rank() == 0) files.file("-o", a.output);
  const std::optional<std::vector<topo::DetectedHost>> hosts = detect_hosts(a);
  if (!hosts) return;  // an MPI rank other than 0
  const topo::Topology t = topo::build_detected_topology(*hosts);
  const std::string text = topo::to_json(t);
  if (a.output.empty()) {  // the file on stdout, for a pipe; what was found on stderr
    std::cerr << summary(*hosts, t);
    print_checked_json(text.substr(0, text.size() - 1));  // to_json ends in a newline
    return;
  }
  files.stage(a.output, text);
  files.commit();
  std::cout << summary(*hosts, t) << "wrote " << a.output << "\n";
}

}  // namespace

void add_topo_detect_command(CLI::App& topo) {
  auto args = std::make_shared<DetectArgs>();
  CLI::App* cmd = topo.add_subcommand(
      "detect", "Describe the machines of this job (mpirun -np N colltune topo detect -o cluster.json) as a topology");
  cmd->add_option("-o,--output", args->output, "write the topology JSON here (atomically); default: standard output");
  cmd->add_option("--ranks-per-host", args->ranks_per_host,
                  "without MPI: ranks on this machine (default: its GPUs, else its physical cores)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--timeout", args->timeout, "limit for each nvidia-smi run (e.g. 30s)");
  CLI::Option* topo_file =
      cmd->add_option("--gpu-topo", args->probe.topo_file, "read `nvidia-smi topo -m` output from this file");
  CLI::Option* query_file =
      cmd->add_option("--gpu-query", args->probe.query_file,
                      "read `nvidia-smi --query-gpu=name,pci.bus_id,compute_cap --format=csv,noheader` from this file");
  // The matrix and the GPU list of one machine go together: refused at parsing, before any
  // probe or MPI exchange runs.
  topo_file->needs(query_file);
  query_file->needs(topo_file);
  cmd->callback([args] {
    args->probe.timeout_s = parse_time_us(args->timeout, "--timeout") / 1e6;
    // `timeout 0` means no limit at all; every wait in colltune has one.
    if (!(args->probe.timeout_s > 0)) throw Error("--timeout " + args->timeout + ": must be above 0");
    run_detect(*args);
  });
}

}  // namespace colltune::cli

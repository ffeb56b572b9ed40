#pragma once
// Every bound colltune puts on its input, in one place. Each limit is a named constant with the
// reason for its value; every refusal goes through limit_error(), so all of them read alike:
//   "WHAT: above the limit of LIMIT (REASON)".
// docs/hardening.md lists them for users and maintainers.
#include <cstddef>
#include <string>
#include <string_view>

#include "colltune/common/error.hpp"

namespace colltune::limits {

// ---- input files -----------------------------------------------------------------------------
// Topology JSON, NCCL XML, workload JSON and Horovod timelines are read whole and parsed in
// memory, where a JSON document takes about ten times its text. The largest real inputs are
// timelines: a few steps of a large model are tens of MB. 256 MiB keeps the parsed document
// within a few GB and still holds hundreds of steps.
inline constexpr std::size_t kMaxInputFileBytes = std::size_t{256} << 20;
inline constexpr const char* kMaxInputFileReason =
    "inputs are parsed in memory; cut a Horovod timeline down to a few steps";

// Nesting of JSON arrays/objects and of XML elements. colltune's formats nest at most 5 levels
// and an NCCL topology dump about 12 (PCIe switch chains); deeper documents only exhaust the
// stack of whatever walks them.
inline constexpr int kMaxJsonDepth = 64;
inline constexpr int kMaxXmlDepth = 64;
inline constexpr const char* kMaxDepthReason = "the formats nest far less; deeper input is not a topology or trace";

// ---- topologies ------------------------------------------------------------------------------
// Ranks of one topology. The largest training clusters hold ~100,000 GPUs; 2^17 ranks leave room
// above that while a fat-tree of that size still builds in seconds and a few hundred MB.
inline constexpr int kMaxTopologyRanks = 1 << 17;
// Devices and directed links of one topology: a DGX-class server is 27 devices and ~80 links per
// 8 GPUs, so these admit kMaxTopologyRanks GPUs in such servers with switches to spare.
inline constexpr std::size_t kMaxTopologyDevices = std::size_t{1} << 19;
inline constexpr std::size_t kMaxTopologyLinks = std::size_t{1} << 21;
inline constexpr const char* kTopologySizeReason = "larger machines exhaust memory before they are simulated";

// Link figures. Latency: a second per hop is ~1,000x a transcontinental link; beyond it a path
// of many hops could sum to infinity. Bandwidth: 1 kB/s .. 1 PB/s per direction spans every
// link that exists by orders of magnitude, and keeps bytes / bandwidth finite.
inline constexpr double kMaxLatencyUs = 1e6;
inline constexpr double kMinBandwidthGbps = 1e-6;
inline constexpr double kMaxBandwidthGbps = 1e6;
inline constexpr const char* kLinkFigureReason = "beyond it times overflow or the figure is a typo";

// ---- collectives, simulation, benchmark ----------------------------------------------------
// Payload per rank: 1 PiB is orders of magnitude beyond any GPU or host buffer.
inline constexpr std::size_t kMaxBytesPerRank = std::size_t{1} << 50;
inline constexpr const char* kMaxBytesReason = "no device holds a buffer within orders of magnitude of it";

// The threads transport runs one thread per rank in one process: beyond ~1,000 threads a run
// measures the OS scheduler, not the algorithm. More ranks: --transport mpi.
inline constexpr int kMaxThreadRanks = 1024;
inline constexpr const char* kMaxThreadRanksReason =
    "one thread per rank in one process; use --transport mpi for more ranks";
// Ranks of an MPI bench: the checked inputs are proven exact up to here (bench_check.cpp, and
// the test that reduces them at this count in several orders).
inline constexpr int kMaxBenchRanks = 1 << 16;
inline constexpr const char* kMaxBenchRanksReason = "the bench's checked inputs are verified exact up to it";

// Evaluations of one tuning run (bayes/random): each Gaussian-process step costs O(n^3) in the
// evaluations so far; 10,000 is hours of fitting.
inline constexpr std::size_t kMaxTuneBudget = 10000;
inline constexpr const char* kMaxTuneBudgetReason = "the Gaussian process costs grow as the cube of it";

// Points of one sweep: each is a whole tuning run (a grid of thousands of configurations), so a
// thousand points is already a long night on a large topology.
inline constexpr std::size_t kMaxSweepPoints = 1000;
inline constexpr const char* kMaxSweepPointsReason = "each point is a whole tuning run";

// Steps of a straggler simulation: each is a step-model run; a million is minutes of it, and
// the p99 of a few thousand is already stable.
inline constexpr std::size_t kMaxStragglerSteps = 1000000;
inline constexpr const char* kMaxStragglerStepsReason = "each step is a step-model run";

// Waiting for an output directory's lock held by another colltune process: writing six small
// files takes milliseconds, so a longer wait means that process is stuck.
inline constexpr double kOutputLockWaitS = 30.0;

// Throws colltune::Error "WHAT: above the limit of LIMIT (REASON)"; WHAT names the input and
// its value ("--ranks 100000"), LIMIT the bound with its unit ("1024 ranks").
[[noreturn]] inline void exceeded(std::string_view what, std::string_view limit, std::string_view reason) {
  std::string msg(what);
  msg.append(": above the limit of ").append(limit).append(" (").append(reason).append(")");
  throw Error(msg);
}

}  // namespace colltune::limits

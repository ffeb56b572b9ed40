#pragma once
// Measured collective times, as calibration and comparison read them (docs/calibration.md):
//  - `colltune bench --json` reports (format "colltune-bench"): threads, MPI, CUDA, NCCL;
//  - Horovod timelines: each fused buffer's NCCL_ALLREDUCE;
//  - nccl-tests text output, as people paste it (all_reduce_perf, reduce_scatter_perf,
//    all_gather_perf): the "#  size count type redop root time algbw busbw #wrong ..." table
//    with whatever columns its version prints, out-of-place and in-place.
// Every row keeps where it came from (FILE:LINE), so fits and comparisons can name it.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "colltune/collectives/schedule.hpp"
#include "colltune/sim/nccl_model.hpp"

namespace colltune::tuner {

// Who ran the collective: one of colltune's own algorithms (a registry id), or NCCL.
enum class MeasuredRuntime { colltune, nccl };

struct Measurement {
  std::string source;  // "FILE:LINE" (nccl-tests) or "FILE: rows[i]" (bench JSON)
  MeasuredRuntime runtime = MeasuredRuntime::colltune;
  coll::Collective collective = coll::Collective::allreduce;
  // colltune: the registry id that ran ("mpi" for MPI_Allreduce). nccl: NCCL_ALGO as given
  // ("Ring", "Tree", ...), empty when NCCL chose.
  std::string algorithm;
  std::string protocol;  // nccl: NCCL_PROTO as given, empty when NCCL chose
  sim::NcclChannelEnv nccl_channels;  // nccl: the channel settings the log shows (NCCL_MIN_CTAS, ...)
  int nranks = 0;             // 0: not stated (a Horovod timeline): the topology's
  std::size_t bytes = 0;      // nccl-tests' "size": the whole buffer (allgather: the output)
  std::size_t elem_size = 4;  // bytes per element of the measured type
  std::size_t chunk_elems = 0;  // colltune: the chunking it ran with (0: the algorithm's default)
  double time_us = 0;           // out of place
  std::optional<double> in_place_time_us;
};

struct MeasurementSet {
  std::vector<std::string> files;
  std::vector<Measurement> rows;
  // Lines of the inputs that look like data but are not (a failed row, "N/A" times), and
  // rows skipped for a reason, each "FILE:LINE: why": reported, never silently dropped.
  std::vector<std::string> skipped;
  // nccl-tests logs: the NCCL settings a log makes (on its command line or in NCCL's "set by
  // environment" lines) that colltune's NCCL model does not read, one entry a file: "FILE sets
  // NCCL_IB_QPS_PER_CONNECTION=2". NCCL_ALGO, NCCL_PROTO and the channel settings
  // (sim::NcclChannelEnv) are read; logging
  // and dump settings and the bootstrap's interface are not listed. Reported, never silently
  // absorbed into a fit.
  std::vector<std::string> unread_nccl_env;
  // Horovod timelines: bytes the fusion-buffer copies (in and out) moved, and their time.
  double fusion_copy_bytes = 0;
  double fusion_copy_us = 0;
};

// What a reader may be told that the file does not say (nccl-tests logs often lack the
// command line): empty / 0 = take it from the file.
struct MeasurementHints {
  std::string nccl_algo;   // NCCL_ALGO of the run
  std::string nccl_proto;  // NCCL_PROTO of the run
  // NCCL's channel settings of the run, "NAME=COUNT" (sim::set_nccl_channel_setting); each
  // replaces the log's own value of that name.
  std::vector<std::string> nccl_env;
  std::string collective;  // "allreduce", "reduce_scatter", "allgather"
  int nranks = 0;
};

// What a file holds, told by its content: a JSON object with "traceEvents" or a JSON array
// is a Horovod timeline, another JSON object a bench report, anything else an nccl-tests log.
// Throws colltune::Error "SOURCE: empty file".
enum class MeasurementFormat { bench_json, horovod_timeline, nccl_tests_log };
MeasurementFormat measurement_format(const std::string& text, const std::string& source);

// Reads one file of any of those formats.
// Throws colltune::Error "FILE: ..." for an empty file, a file with no data rows, a nccl-tests
// table whose columns are not recognised, or rows that disagree with the header.
MeasurementSet read_measurements(const std::string& path, const MeasurementHints& hints = {});
// Several files into one set, in order.
MeasurementSet read_measurements(const std::vector<std::string>& paths, const MeasurementHints& hints = {});

// Parsers on text (`source` names it in messages and row sources).
MeasurementSet parse_bench_json(const std::string& text, const std::string& source);
// A Horovod timeline (HOROVOD_TIMELINE): one row per fused buffer's NCCL_ALLREDUCE, its bytes
// the tensors' in the buffer; nranks from the hints (0: the topology's, a timeline being one
// rank's view).
MeasurementSet parse_horovod_timeline(const std::string& text, const std::string& source,
                                      const MeasurementHints& hints = {});
MeasurementSet parse_nccl_tests_log(const std::string& text, const std::string& source,
                                    const MeasurementHints& hints = {});

// "allreduce", "reduce_scatter", "allgather" (coll::to_string's names; also nccl-tests'
// "all_reduce", "all_gather"); throws colltune::Error listing them.
coll::Collective parse_collective_name(const std::string& name);

}  // namespace colltune::tuner

// Horovod YAML/env, NCCL env and NCCL tuner CSV emitters.
#include <cstdio>
#include <set>
#include <sstream>

#include "colltune/collectives/registry.hpp"
#include "colltune/common/error.hpp"
#include "colltune/sim/nccl_names.hpp"
#include "colltune/tuner/emit.hpp"

namespace colltune::tuner {
namespace {

constexpr int kHorovodCacheCapacity = 1024;  // Horovod's default response cache size

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// Fusion threshold in MB (MiB) as horovodrun reads it: an integer it multiplies by 1024^2. The
// search space holds whole MiB only (space.hpp), so the file carries exactly what was predicted.
std::string fusion_mb(std::size_t bytes) {
  if (bytes % MiB != 0)
    throw Error("horovod.yaml: fusion threshold " + std::to_string(bytes) + " bytes is not a whole number of MiB");
  return std::to_string(bytes / MiB);
}

// NCCL's name of a table row's algorithm (tuner CSV spelling): the NCCL cell of an NCCL table,
// or the registry's NCCL name of colltune's schedule (a table NCCL's model did not price).
const std::string& nccl_name(const SizeRange& row) {
  if (!row.nccl_algorithm.empty()) return row.nccl_algorithm;
  const std::string& name = coll::find_algorithm(row.choice.algorithm).nccl_name;
  if (name.empty()) throw Error("nccl_tuner.conf: algorithm " + row.choice.algorithm + " has no NCCL equivalent");
  return name;
}

// Why the configuration hands NCCL no per-size rows.
std::string why_no_rows(const TuneResult& r) {
  return r.no_nccl_rows.empty() ? "NCCL's own algorithm and protocol choice is predicted best" : r.no_nccl_rows;
}

// "; NCCL's own pick predicted 70.7 us: gain 11.1%": the predicted gain of a row over NCCL's pick.
std::string gain_text(const SizeRange& row) {
  if (row.nccl_pick_us < 0 || !(row.time_us > 0)) return "";
  char buf[96];
  std::snprintf(buf, sizeof buf, "; NCCL's own pick predicted %s: gain %.1f%%", format_time_us(row.nccl_pick_us).c_str(),
                100 * (row.nccl_pick_us / row.time_us - 1));
  return buf;
}

// "; the calibration measured 1 MiB .. 8 GiB only": a row reaching beyond the sizes the
// calibrated topology's fit measured rests on the fit extrapolated there.
std::string extrapolation_text(const TuneResult& r, const SizeRange& row) {
  if (r.measured_max_bytes == 0) return "";
  if (row.min_bytes >= r.measured_min_bytes && row.max_bytes <= r.measured_max_bytes) return "";
  return "; the calibration measured " + format_bytes(r.measured_min_bytes) + " .. " +
         format_bytes(r.measured_max_bytes) + " only";
}

// One comment line: a newline in a path must not end the comment.
std::string comment_text(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text;
}

std::string header(const TuneResult& r, const char* comment) {
  std::ostringstream out;
  out << comment << " colltune tune: " << r.model << " on " << r.topology << " (" << r.ranks << " ranks, " << r.hosts
      << " hosts), runtime " << coll::to_string(r.runtime) << ", objective " << r.objective << ", strategy "
      << to_string(r.strategy) << ", seed " << r.seed << "\n"
      << comment << " predicted step " << format_time_us(r.best.step_time_us) << " vs "
      << format_time_us(r.baseline.step_time_us) << " (speedup " << format_ratio(r.speedup()) << "x) with the baseline:\n"
      << comment << "   " << comment_text(r.baseline_description) << "\n";
  return out.str();
}

std::string fp16_advice(const TuneResult& r, const char* comment) {
  std::ostringstream out;
  const auto& e = r.fp16;
  out << comment << " fp16 compression: " << (r.best.candidate.fp16 ? "RECOMMENDED" : "not recommended")
      << " (predicted rms relative gradient error " << number(e.relative_error) << ", limit "
      << number(e.max_allowed) << (e.accepted ? "" : ", over the limit") << ")\n";
  if (r.best.candidate.fp16)
    out << comment << " Horovod has no config key for it; in code: "
        << "hvd.DistributedOptimizer(opt, compression=hvd.Compression.fp16)\n";
  return out.str();
}

// A value the shell reads back unchanged from `. ./nccl.env`: as is when it holds only safe
// characters, else single-quoted (a ' inside becomes '\'').
std::string shell_word(const std::string& value) {
  const bool plain = !value.empty() && value.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                               "0123456789_./+-:@,=%") == std::string::npos;
  if (plain) return value;
  std::string quoted = "'";
  for (char c : value) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// The lines that make NCCL load colltune's tuner plugin on this job's table.
void plugin_lines(std::ostream& out, const TuneResult& r, const NcclEnvPaths& paths) {
  out << "# colltune's NCCL tuner plugin applies nccl_tuner.conf to allreduce on " << r.hosts << " nodes, " << r.ranks
      << " ranks.\n"
      << "# Check: NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING shows its \"colltune tuner:\" lines.\n"
      << "# Plugin " << comment_text(paths.plugin.how) << ".\n";
  if (paths.plugin.found())
    out << "NCCL_TUNER_PLUGIN=" << shell_word(paths.plugin.path.string()) << "\n";
  else
    out << "# Install colltune (cmake --install) or build it, then set the path:\n"
        << "# NCCL_TUNER_PLUGIN=/path/to/libcolltune-nccl-tuner.so\n";
  out << "NCCL_TUNER_CONFIG_FILE=" << shell_word(paths.table.string()) << "\n";
}

}  // namespace

std::string emit_horovod_yaml(const TuneResult& r) {
  const Candidate& c = r.best.candidate;
  std::ostringstream out;
  out << header(r, "#") << fp16_advice(r, "#") << "# Use: horovodrun --config-file horovod.yaml ...\n"
      << "params:\n"
      << "  fusion_threshold_mb: " << fusion_mb(c.fusion_threshold_bytes) << "\n"
      << "  cycle_time_ms: " << number(c.cycle_time_us / 1000.0) << "\n"
      << "  cache_capacity: " << kHorovodCacheCapacity << "\n"
      << "  hierarchical_allreduce: " << (r.hierarchical_allreduce ? "true" : "false") << "\n"
      << "  hierarchical_allgather: false\n"
      << "  torus_allreduce: false\n";
  return out.str();
}

std::string emit_horovod_env(const TuneResult& r) {
  const Candidate& c = r.best.candidate;
  std::ostringstream out;
  out << header(r, "#") << fp16_advice(r, "#")
      << "# Use: set -a; . ./horovod.env; set +a   (or mpirun -x each variable)\n"
      << "HOROVOD_FUSION_THRESHOLD=" << c.fusion_threshold_bytes << "\n"
      << "HOROVOD_CYCLE_TIME=" << number(c.cycle_time_us / 1000.0) << "\n"
      << "HOROVOD_CACHE_CAPACITY=" << kHorovodCacheCapacity << "\n"
      << "HOROVOD_HIERARCHICAL_ALLREDUCE=" << (r.hierarchical_allreduce ? 1 : 0) << "\n"
      << "HOROVOD_HIERARCHICAL_ALLGATHER=0\n"
      << "HOROVOD_TORUS_ALLREDUCE=0\n";
  return out.str();
}

namespace {

// Whether the rows run from 0 bytes to the table's end without a gap (a gap is NCCL's own choice).
bool covers_every_size(const std::vector<SizeRange>& rows) {
  std::size_t next = 0;
  for (const SizeRange& row : rows) {
    if (row.min_bytes != next) return false;
    if (row.max_bytes >= kTableMaxBytes) return true;
    next = row.max_bytes + 1;
  }
  return false;
}

// NCCL_ALGO / NCCL_PROTO when one value holds at every size: what the plugin does, for jobs
// without it (then for every collective), commented when the plugin is loaded.
void global_nccl_lines(std::ostream& out, const TuneResult& r, bool plugin) {
  std::set<std::string> algos, protos;
  for (const auto& row : r.nccl_table) {
    algos.insert(std::string(sim::nccl_env_name(sim::parse_nccl_algo(nccl_name(row)))));
    protos.insert(std::string(sim::nccl_env_name(sim::parse_nccl_proto(row.protocol))));
  }
  if (r.nccl_table.empty()) {
    out << "# No tuner rows: " << why_no_rows(r) << ". NCCL_ALGO / NCCL_PROTO are left to NCCL.\n";
    return;
  }
  if (!covers_every_size(r.nccl_table)) {
    out << "# NCCL keeps its own choice at the sizes without a row: no NCCL_ALGO / NCCL_PROTO gives this table "
           "without the plugin.\n";
    return;
  }
  const char* prefix = plugin ? "# " : "";
  if (algos.size() == 1)
    out << "# One NCCL algorithm at every size" << (plugin ? "; without the plugin, for every collective:\n" : ":\n")
        << prefix << "NCCL_ALGO=" << *algos.begin() << "\n";
  if (protos.size() == 1)
    out << "# One NCCL protocol at every size" << (plugin ? "; without the plugin, for every collective:\n" : ":\n")
        << prefix << "NCCL_PROTO=" << *protos.begin() << "\n";
}

}  // namespace

std::string emit_nccl_env(const TuneResult& r, const NcclEnvPaths& paths) {
  std::ostringstream out;
  out << header(r, "#") << "# Use: set -a; . ./nccl.env; set +a\n";
  plugin_lines(out, r, paths);
  global_nccl_lines(out, r, paths.plugin.found());
  if (r.runtime == coll::Runtime::colltune && r.best.candidate.chunk_bytes > 0 &&
      r.best.candidate.algorithm != kAutoAlgorithm) {
    // An unverified mapping: NCCL cuts NCCL_BUFFSIZE into NCCL_STEPS = 8 steps, but its ring
    // allreduce sends 2-step slices in 4-step chunks and resizes them for small messages, so
    // "one colltune chunk = one step" is our approximation, not checked against NCCL runs.
    out << "# Pipelining chunk " << format_bytes(r.best.candidate.chunk_bytes)
        << " = NCCL_BUFFSIZE / 8 (one NCCL step; an approximation, not verified against NCCL).\n"
        << "NCCL_BUFFSIZE=" << r.best.candidate.chunk_bytes * 8 << "\n";
  }
  if (const std::vector<std::string> settings = nccl_setting_lines(r.nccl); !settings.empty()) {
    // tune --nccl-algo/--nccl-proto/--nccl-env: NCCL picked under them, and the table offers only
    // cells they leave NCCL, so the prediction holds with them set.
    out << "# Your NCCL settings, under which NCCL's pick and the table were predicted:\n";
    for (const std::string& s : settings) {
      const std::size_t eq = s.find('=');
      out << s.substr(0, eq + 1) << shell_word(s.substr(eq + 1)) << "\n";
    }
  }
  if (r.nccl.channel_env.empty())
    out << "# Channels are left to NCCL: NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS are not set.\n";
  return out.str();
}

std::string emit_nccl_tuner_conf(const TuneResult& r) {
  std::ostringstream out;
  out << header(r, "#")
      << "# Read by colltune's NCCL tuner plugin (libcolltune-nccl-tuner.so); nccl.env sets\n"
      << "# NCCL_TUNER_PLUGIN and NCCL_TUNER_CONFIG_FILE (absolute paths) for it.\n"
      << "# collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff\n"
      << "# -1 = any / keep NCCL's choice. Rows hold only for this job's nNodes and nRanks.\n";
  if (r.nccl_table.empty()) out << "# No rows: " << why_no_rows(r) << ".\n";
  for (const auto& range : r.nccl_table) {
    out << "# " << format_bytes(range.min_bytes) << " .. " << format_bytes(range.max_bytes) << ": "
        << nccl_name(range) << "/" << range.protocol << " (" << range.choice.algorithm << "), predicted "
        << format_time_us(range.time_us) << " at " << format_bytes(range.sampled_bytes) << gain_text(range)
        << extrapolation_text(r, range) << "\n"
        << "allreduce," << range.min_bytes << "," << range.max_bytes << "," << nccl_name(range) << ","
        << range.protocol << ",-1," << r.hosts << "," << r.ranks << ",-1,-1\n";
  }
  return out.str();
}

}  // namespace colltune::tuner

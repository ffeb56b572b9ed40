#pragma once
// Config emitters: the files the runtime reads (formats in docs/config-formats.md, rules in
// docs/design.md "Formats the runtimes read"), each a pure function of a TuneResult, one table of them
// (output_files) and one call that writes them all atomically.
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "colltune/tuner/plugin_location.hpp"
#include "colltune/tuner/tuner.hpp"

namespace colltune::tuner {

inline constexpr int kColltuneJsonVersion = 1;

// horovodrun --config-file: a `params:` mapping (fusion in MB, cycle in ms, hierarchical flags).
std::string emit_horovod_yaml(const TuneResult& result);
// The same settings as HOROVOD_* variables (fusion in bytes); fp16 as a recommendation comment.
std::string emit_horovod_env(const TuneResult& result);
// Where nccl.env points NCCL: the table as written (absolute) and colltune's tuner plugin.
struct NcclEnvPaths {
  std::filesystem::path table;
  NcclPluginLocation plugin;
};
// NCCL_TUNER_PLUGIN (commented, with the reason, when the plugin was not found) and
// NCCL_TUNER_CONFIG_FILE by absolute path; NCCL_ALGO / NCCL_PROTO when one choice is best for
// every size (commented when the plugin does it); NCCL_BUFFSIZE for a fixed chunk.
std::string emit_nccl_env(const TuneResult& result, const NcclEnvPaths& paths);
// colltune's NCCL tuner plugin CSV (the format of NCCL's example plugin):
// collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff
std::string emit_nccl_tuner_conf(const TuneResult& result);
// colltune.json, version kColltuneJsonVersion (schema: tuner/schema/colltune.schema.json).
std::string emit_colltune_json(const TuneResult& result);
// report.html: one self-contained page, inline SVG, no network.
std::string emit_report_html(const TuneResult& result);

// The summary `colltune tune --json` prints: chosen knobs, predicted and baseline step time,
// speedup, and the files written.
std::string summary_json(const TuneResult& result, const std::vector<std::filesystem::path>& files);

// The tuner table's file name (nccl.env points NCCL at it by absolute path).
inline constexpr const char* kNcclTunerConfFile = "nccl_tuner.conf";

// What a renderer may need besides the result: where the files are written.
struct EmitContext {
  NcclEnvPaths nccl;
};

// One output file: its name in --out, who reads it, and its render function. Adding a file is
// one entry of output_files() plus its test.
struct OutputFile {
  std::string name;
  std::string reader;
  std::function<std::string(const TuneResult&, const EmitContext&)> render;
};

// The one table of output files, in the order written.
const std::vector<OutputFile>& output_files();
// Whether `runtime`'s jobs get the file: --runtime ps writes colltune.json and report.html only
// (docs/tune-runtimes.md), the others every file.
bool emitted_for(const OutputFile& file, coll::Runtime runtime);
// Their names, in the same order (from output_files()).
const std::vector<std::string>& emitted_file_names();
// "horovod.yaml, horovod.env, ..." for help texts.
std::string emitted_file_list();

// Renders every file of output_files(), then writes them with colltune::FileSetWriter: `dir`
// holds either the complete old set or the complete new one, also when interrupted or killed,
// and one writer at a time. Creates `dir` if missing. Returns the final paths.
std::vector<std::filesystem::path> write_configs(const std::filesystem::path& dir, const TuneResult& result);
// The files write_configs writes, NAME and content in order, rendered for directory `dir`: for a
// command that writes them together with its other outputs (OutputFiles).
std::vector<std::pair<std::string, std::string>> render_configs(const std::filesystem::path& dir,
                                                                const TuneResult& result);

}  // namespace colltune::tuner

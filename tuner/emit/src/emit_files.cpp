// The table of output files and the all-or-nothing write of them.
#include <system_error>

#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"
#include "colltune/tuner/emit.hpp"

namespace colltune::tuner {
namespace {

// Renderers that take only the result.
template <std::string (*Emit)(const TuneResult&)>
std::string plain(const TuneResult& result, const EmitContext& /*context*/) {
  return Emit(result);
}

std::string nccl_env(const TuneResult& result, const EmitContext& context) {
  return emit_nccl_env(result, context.nccl);
}

}  // namespace

const std::vector<OutputFile>& output_files() {
  static const std::vector<OutputFile> files{
      {"horovod.yaml", "horovodrun --config-file", plain<emit_horovod_yaml>},
      {"horovod.env", "Horovod (environment, or mpirun -x)", plain<emit_horovod_env>},
      {"nccl.env", "NCCL (environment): loads colltune's tuner plugin on nccl_tuner.conf", nccl_env},
      {kNcclTunerConfFile, "colltune's NCCL tuner plugin", plain<emit_nccl_tuner_conf>},
      {"colltune.json", "tools, scripts, CI (schema: tuner/schema/colltune.schema.json)", plain<emit_colltune_json>},
      {"report.html", "people (a browser)", plain<emit_report_html>},
  };
  return files;
}

bool emitted_for(const OutputFile& file, coll::Runtime runtime) {
  // A parameter-server job reads no Horovod or NCCL settings: only the record and the report.
  if (runtime == coll::Runtime::ps) return file.name == "colltune.json" || file.name == "report.html";
  return true;
}

const std::vector<std::string>& emitted_file_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const OutputFile& f : output_files()) out.push_back(f.name);
    return out;
  }();
  return names;
}

std::string emitted_file_list() {
  std::string out;
  for (const auto& name : emitted_file_names()) out += (out.empty() ? "" : ", ") + name;
  return out;
}

std::vector<std::pair<std::string, std::string>> render_configs(const std::filesystem::path& dir, const TuneResult& r) {
  // nccl.env names the table by absolute path: NCCL reads it from the job's working directory.
  std::error_code ec;
  const EmitContext context{{std::filesystem::absolute(dir, ec).lexically_normal() / kNcclTunerConfFile,
                             locate_nccl_tuner_plugin()}};
  if (ec) throw Error(dir.string() + ": cannot make an absolute path (" + ec.message() + ")");
  std::vector<std::pair<std::string, std::string>> files;
  for (const OutputFile& f : output_files())
    if (emitted_for(f, r.runtime)) files.emplace_back(f.name, f.render(r, context));
  return files;
}

std::vector<std::filesystem::path> write_configs(const std::filesystem::path& dir, const TuneResult& r) {
  // Render everything first: a failure here leaves the directory untouched.
  const auto files = render_configs(dir, r);
  // FileSetWriter creates dir, refuses a destination that is not colltune's before anything
  // changes, and switches the files as one unit (docs/hardening.md).
  FileSetWriter writer(dir);
  for (const auto& [name, content] : files) writer.stage(name, content);
  return writer.commit();
}

}  // namespace colltune::tuner

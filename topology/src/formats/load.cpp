// load_topology(): a preset spec, a topology JSON file or an NCCL XML dump, validated.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <system_error>

#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"
#include "colltune/topology/json_io.hpp"
#include "colltune/topology/nccl_xml.hpp"
#include "colltune/topology/presets.hpp"
#include "presets/replicate.hpp"

namespace colltune::topo {
namespace {

std::string lower_extension(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

// An existing path that is not a directory. Uses the error_code overloads: a spec too long to
// be a file name, or one behind a directory we may not search, is "not a file", not a crash.
bool is_regular_path(const std::string& spec) {
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(spec, ec);
  return !ec && std::filesystem::exists(status) && !std::filesystem::is_directory(status);
}

// A file without a telling extension: JSON starts with '{', XML with '<'.
Topology load_by_content(const std::string& path) {
  const std::string text = read_file(path);
  const auto first = std::find_if(text.begin(), text.end(), [](unsigned char c) { return !std::isspace(c); });
  if (first != text.end() && *first == '{') return topology_from_json(text, path);
  if (first != text.end() && *first == '<') return topology_from_nccl_xml(text, path);
  throw Error(path + ": neither topology JSON ('{') nor NCCL topology XML ('<')");
}

Topology load_file(const std::string& spec) {
  const std::string ext = lower_extension(spec);
  if (ext == ".json") return load_topology_json(spec);
  if (ext == ".xml") return load_nccl_xml(spec);
  return load_by_content(spec);
}

// "FILE:key=value,...": the position of the ':' after an existing file's name, or npos.
std::size_t file_params_colon(const std::string& spec) {
  for (std::size_t colon = spec.find(':'); colon != std::string::npos; colon = spec.find(':', colon + 1))
    if (colon > 0 && is_regular_path(spec.substr(0, colon))) return colon;
  return std::string::npos;
}

}  // namespace

Topology load_topology(const std::string& spec) {
  Topology t;
  if (spec.empty()) throw Error("empty topology spec (give a preset such as dgx-h100, or a .json / .xml file)");
  if (is_preset_spec(spec)) {
    t = make_preset(spec);
  } else if (const std::size_t colon = file_params_colon(spec); colon != std::string::npos && !is_regular_path(spec)) {
    const std::string file = spec.substr(0, colon);
    Topology server = load_file(file);
    try {
      server.validate();
    } catch (const Error& e) {
      throw Error(file + ": " + e.what());
    }
    t = detail::replicate_server(server, file, std::string_view(spec).substr(colon + 1));
  } else {
    const std::string ext = lower_extension(spec);
    if (ext == ".json")
      t = load_topology_json(spec);
    else if (ext == ".xml")
      t = load_nccl_xml(spec);
    else if (is_regular_path(spec))
      t = load_by_content(spec);
    else
      t = make_preset(spec);  // not a file: report it as an unknown preset, listing the valid ones
  }
  if (t.name.empty()) t.name = spec;
  try {
    t.validate();
  } catch (const Error& e) {
    throw Error(spec + ": " + e.what());
  }
  return t;
}

}  // namespace colltune::topo

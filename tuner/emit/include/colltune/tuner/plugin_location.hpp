#pragma once
// Where colltune's NCCL tuner plugin (libcolltune-nccl-tuner.so, built from tuner/nccl_tuner_plugin/) is,
// so that nccl.env can name it by absolute path in NCCL_TUNER_PLUGIN.
#include <filesystem>
#include <string>

namespace colltune::tuner {

struct NcclPluginLocation {
  std::filesystem::path path;  // absolute; empty when not found
  std::string how;             // where it was found, or why it was not (one line)
  bool found() const { return !path.empty(); }
};

// The plugin installed with the running program (<prefix>/<libdir>, then any <prefix>/lib*,
// where <prefix> is the parent of the directory of /proc/self/exe), else the copy in the build
// tree this library was built in.
NcclPluginLocation locate_nccl_tuner_plugin();

// The same search for a given program and build-tree copy.
NcclPluginLocation locate_nccl_tuner_plugin(const std::filesystem::path& program,
                                            const std::filesystem::path& build_tree_copy);

}  // namespace colltune::tuner

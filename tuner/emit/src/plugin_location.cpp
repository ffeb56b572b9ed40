// Locating libcolltune-nccl-tuner.so. An installed colltune finds the plugin installed beside
// it (cmake --install puts both under one prefix: bin/colltune and lib*/); a colltune run from
// its build tree finds the plugin built there. The build-tree path comes from CMake
// (COLLTUNE_NCCL_TUNER_BUILD_PATH) and is only a fallback: a moved or deleted build tree simply
// makes it not found.
#include "colltune/tuner/plugin_location.hpp"

#include <algorithm>
#include <vector>

namespace colltune::tuner {
namespace fs = std::filesystem;
namespace {

constexpr const char* kPluginFile = COLLTUNE_NCCL_TUNER_FILE;
constexpr const char* kInstallLibDir = COLLTUNE_INSTALL_LIBDIR;

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// <prefix>/<libdir> first (where this build installs), then the other <prefix>/lib* folders in
// name order (lib, lib64, ... as other layouts use).
std::vector<fs::path> library_dirs(const fs::path& prefix) {
  std::vector<fs::path> dirs{prefix / kInstallLibDir};
  std::vector<fs::path> others;
  std::error_code ec;
  for (fs::directory_iterator it(prefix, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().filename().string().rfind("lib", 0) == 0 && it->is_directory(ec) && it->path() != dirs[0])
      others.push_back(it->path());
  std::sort(others.begin(), others.end());
  dirs.insert(dirs.end(), others.begin(), others.end());
  return dirs;
}

}  // namespace

NcclPluginLocation locate_nccl_tuner_plugin(const fs::path& program, const fs::path& build_tree_copy) {
  const fs::path prefix = program.parent_path().parent_path();
  if (!program.empty())
    for (const fs::path& dir : library_dirs(prefix))
      if (is_file(dir / kPluginFile))
        return {(dir / kPluginFile).lexically_normal(), "installed with colltune in " + dir.lexically_normal().string()};
  if (!build_tree_copy.empty() && is_file(build_tree_copy))
    return {build_tree_copy, "in colltune's build tree (not installed)"};
  return {{}, std::string("not found: no ") + kPluginFile + " in " + (prefix / "lib*").string() + " beside " +
                  (program.empty() ? "this program" : program.string()) + ", and no build-tree copy at " +
                  build_tree_copy.string()};
}

NcclPluginLocation locate_nccl_tuner_plugin() {
  std::error_code ec;
  const fs::path program = fs::read_symlink("/proc/self/exe", ec);
  return locate_nccl_tuner_plugin(ec ? fs::path{} : program, COLLTUNE_NCCL_TUNER_BUILD_PATH);
}

}  // namespace colltune::tuner

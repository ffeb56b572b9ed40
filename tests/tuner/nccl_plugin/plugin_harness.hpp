#pragma once
// Drives libcolltune-nccl-tuner.so the way NCCL does: dlopen with RTLD_NOW | RTLD_LOCAL, dlsym
// of a versioned struct, init with a printf-style logger, then getCollInfo with a contiguous
// float[7][3] cost table cast to float**. Logged lines are captured for the tests to read.
#include <dlfcn.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "nccl_tuner_abi.h"

namespace colltune::nccl_plugin::test {

namespace abi = colltune::nccl_abi;

// ---- captured log ------------------------------------------------------------------------

struct LogLine {
  abi::LogLevel level;
  unsigned long flags;
  std::string text;
};

inline std::vector<LogLine>& captured_log() {
  static std::vector<LogLine> lines;
  return lines;
}

// Has the C-variadic signature NCCL's logger has, so the plugin calls it exactly as it calls NCCL.
inline void capture_log(abi::LogLevel level, unsigned long flags, const char* /*file*/, int /*line*/, const char* fmt,
                        ...) {
  char buf[2048];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  captured_log().push_back({level, flags, buf});
}

inline std::vector<std::string> logged(abi::LogLevel level) {
  std::vector<std::string> out;
  for (const auto& l : captured_log())
    if (l.level == level) out.push_back(l.text);
  return out;
}

// ---- the library ------------------------------------------------------------------------

class Plugin {
 public:
  // As NCCL opens it (src/plugin/plugin_open.cc): RTLD_NOW | RTLD_LOCAL.
  Plugin() : handle_(dlopen(COLLTUNE_NCCL_TUNER_PATH, RTLD_NOW | RTLD_LOCAL)) {}
  ~Plugin() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;

  bool loaded() const { return handle_ != nullptr; }
  template <class T>
  T* symbol(const char* name) const {
    return static_cast<T*>(dlsym(handle_, name));
  }

 private:
  void* handle_;
};

inline const Plugin& plugin() {
  static const Plugin p;
  return p;
}

// ---- NCCL's cost table -------------------------------------------------------------------

// float[numAlgo][numProto] as NCCL declares it on its stack. Every cell starts distinct and
// positive (10 + 3a + p), so any change is visible and the cheapest is known.
struct Costs {
  static constexpr int kAlgos = abi::kNumAlgorithms;
  static constexpr int kProtos = abi::kNumProtocols;
  float cell[kAlgos][kProtos];

  Costs() {
    for (int a = 0; a < kAlgos; ++a)
      for (int p = 0; p < kProtos; ++p) cell[a][p] = static_cast<float>(10 + 3 * a + p);
  }
  float** as_nccl() { return reinterpret_cast<float**>(cell); }

  // NCCL's selection: the smallest cell >= 0, first in (algorithm, protocol) order on ties.
  std::pair<int, int> nccl_pick() const {
    std::pair<int, int> best{-1, -1};
    for (int a = 0; a < kAlgos; ++a)
      for (int p = 0; p < kProtos; ++p)
        if (cell[a][p] >= 0 && (best.first < 0 || cell[a][p] < cell[best.first][best.second])) best = {a, p};
    return best;
  }
  bool operator==(const Costs& o) const {
    for (int a = 0; a < kAlgos; ++a)
      for (int p = 0; p < kProtos; ++p)
        if (cell[a][p] != o.cell[a][p]) return false;
    return true;
  }
};

// ---- one exported interface, called as NCCL calls it ------------------------------------

// A cost-table interface (v3 to v6) behind one call shape. v3 has no regBuff argument.
class TableTuner {
 public:
  explicit TableTuner(int version) : version_(version) {}
  int version() const { return version_; }
  bool passes_reg_buff() const { return version_ >= 4; }

  // init as NCCL would for a communicator of this shape; returns the context.
  void* init(std::size_t n_ranks, std::size_t n_nodes, abi::Logger log = capture_log) const;
  // getCollInfo; *n_channels is passed through so a test can check it is left alone.
  int call(void* ctx, int coll, std::size_t bytes, Costs& costs, int* n_channels, int pipe_ops = 1,
           int reg_buff = 0, int num_algo = Costs::kAlgos) const;
  void finalize(void* ctx) const;

 private:
  int version_;
};

inline void* TableTuner::init(std::size_t n_ranks, std::size_t n_nodes, abi::Logger log) const {
  void* ctx = nullptr;
  int rc = -1;
  if (version_ >= 5) {
    abi::NvlDomainInfo nvl{1, static_cast<int>(n_ranks), static_cast<int>(n_ranks)};
    abi::TunerConstants constants{};
    const auto init_v5 = version_ == 6 ? plugin().symbol<abi::TunerV6>("ncclTunerPlugin_v6")->init
                                       : plugin().symbol<abi::TunerV5>("ncclTunerPlugin_v5")->init;
    rc = init_v5(&ctx, 0x1234, n_ranks, n_nodes, log, &nvl, &constants);
  } else if (version_ == 4) {
    rc = plugin().symbol<abi::TunerV4>("ncclTunerPlugin_v4")->init(n_ranks, n_nodes, log, &ctx);
  } else {
    rc = plugin().symbol<abi::TunerV3>("ncclTunerPlugin_v3")->init(n_ranks, n_nodes, log, &ctx);
  }
  EXPECT_EQ(rc, abi::kSuccess) << "init must succeed on every path: NCCL fails the communicator otherwise";
  return ctx;
}

inline int TableTuner::call(void* ctx, int coll, std::size_t bytes, Costs& costs, int* n_channels, int pipe_ops,
                            int reg_buff, int num_algo) const {
  switch (version_) {
    case 6:
      return plugin().symbol<abi::TunerV6>("ncclTunerPlugin_v6")->get_coll_info(
          ctx, coll, bytes, pipe_ops, costs.as_nccl(), num_algo, Costs::kProtos, reg_buff, n_channels);
    case 5:
      return plugin().symbol<abi::TunerV5>("ncclTunerPlugin_v5")->get_coll_info(
          ctx, coll, bytes, pipe_ops, costs.as_nccl(), num_algo, Costs::kProtos, reg_buff, n_channels);
    case 4:
      return plugin().symbol<abi::TunerV4>("ncclTunerPlugin_v4")->get_coll_info(
          ctx, coll, bytes, pipe_ops, costs.as_nccl(), num_algo, Costs::kProtos, reg_buff, n_channels);
    default:
      return plugin().symbol<abi::TunerV3>("ncclTunerPlugin_v3")->get_coll_info(
          ctx, coll, bytes, pipe_ops, costs.as_nccl(), num_algo, Costs::kProtos, n_channels);
  }
}

inline void TableTuner::finalize(void* ctx) const {
  int rc = -1;
  switch (version_) {
    case 6: rc = plugin().symbol<abi::TunerV6>("ncclTunerPlugin_v6")->finalize(ctx); break;
    case 5: rc = plugin().symbol<abi::TunerV5>("ncclTunerPlugin_v5")->finalize(ctx); break;
    case 4: rc = plugin().symbol<abi::TunerV4>("ncclTunerPlugin_v4")->destroy(ctx); break;
    default: rc = plugin().symbol<abi::TunerV3>("ncclTunerPlugin_v3")->destroy(ctx); break;
  }
  EXPECT_EQ(rc, abi::kSuccess);
}

// ---- environment and files ----------------------------------------------------------------

// Points the plugin at a table through one variable for the fixture's lifetime; the other
// variable is cleared, and both are restored afterwards.
class TableEnv {
 public:
  TableEnv() {
    for (const char* v : kVars)
      if (const char* old = std::getenv(v)) saved_.emplace_back(v, old);
    clear();
  }
  ~TableEnv() {
    clear();
    for (const auto& [k, v] : saved_) setenv(k.c_str(), v.c_str(), 1);
  }
  void set(const char* var, const std::string& value) { setenv(var, value.c_str(), 1); }
  void clear() {
    for (const char* v : kVars) unsetenv(v);
  }

 private:
  static constexpr const char* kVars[] = {"NCCL_TUNER_CONFIG_FILE", "COLLTUNE_TUNER_TABLE"};
  std::vector<std::pair<std::string, std::string>> saved_;
};

// A per-test scratch directory, removed afterwards.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "." + info->name();
    for (char& c : name)
      if (c == '/') c = '_';
    path_ = std::filesystem::temp_directory_path() / ("colltune-plugin-" + std::to_string(::getpid()) + "-" + name);
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string write(const std::string& name, const std::string& text) const {
    const auto p = path_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace colltune::nccl_plugin::test

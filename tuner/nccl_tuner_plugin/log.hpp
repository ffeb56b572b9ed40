#pragma once
// Logging through the function NCCL hands the plugin at init, so the plugin's lines appear
// with NCCL's own and obey NCCL_DEBUG / NCCL_DEBUG_SUBSYS. The format and arguments go to NCCL
// unformatted: NCCL drops filtered lines before formatting, so a log call on the collective
// path costs a function call, not an snprintf.
#include <source_location>
#include <string_view>
#include <type_traits>

#include "nccl_tuner_abi.h"

namespace colltune::nccl_plugin {

// A format string and the source line that logs it (NCCL prints file:line with warnings).
struct Format {
  const char* text;
  std::source_location where;
  Format(const char* fmt, std::source_location loc = std::source_location::current()) : text(fmt), where(loc) {}
  const char* file() const {
    const std::string_view path = where.file_name();
    const auto slash = path.rfind('/');
    return slash == std::string_view::npos ? where.file_name() : where.file_name() + slash + 1;
  }
};

class Log {
 public:
  explicit Log(nccl_abi::Logger logger) : logger_(logger) {}

  template <class... Args>
  void warn(Format f, Args... args) const {
    emit(nccl_abi::kLogWarn, nccl_abi::kSubsysInit | nccl_abi::kSubsysTuning, f, args...);
  }
  // Init-time facts: shown with NCCL_DEBUG=INFO and the default subsystems, or with TUNING.
  template <class... Args>
  void info_init(Format f, Args... args) const {
    emit(nccl_abi::kLogInfo, nccl_abi::kSubsysInit | nccl_abi::kSubsysTuning, f, args...);
  }
  // Decisions: shown with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING.
  template <class... Args>
  void info_tuning(Format f, Args... args) const {
    emit(nccl_abi::kLogInfo, nccl_abi::kSubsysTuning, f, args...);
  }
  // Every call: shown with NCCL_DEBUG=TRACE NCCL_DEBUG_SUBSYS=TUNING.
  template <class... Args>
  void trace(Format f, Args... args) const {
    emit(nccl_abi::kLogTrace, nccl_abi::kSubsysTuning, f, args...);
  }

 private:
  template <class... Args>
  void emit(nccl_abi::LogLevel level, unsigned long flags, const Format& f, Args... args) const {
    // Only what C varargs carry unchanged: numbers and C strings.
    static_assert(((std::is_arithmetic_v<Args> || std::is_same_v<Args, const char*>) && ...));
    if (logger_ != nullptr) logger_(level, flags, f.file(), static_cast<int>(f.where.line()), f.text, args...);
  }

  nccl_abi::Logger logger_;
};

}  // namespace colltune::nccl_plugin

#pragma once
// Internal: the key=value parameters of one preset spec, checked against the preset's table.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "colltune/topology/hardware.hpp"
#include "colltune/topology/presets.hpp"

namespace colltune::topo::detail {

class PresetParams {
 public:
  // Parses "key=value,key=value" for `info` (parse::split_items); unknown keys, malformed pairs and
  // keys given twice throw Error.
  PresetParams(const PresetInfo& info, std::string_view text);

  // Each getter reads the given value or the table's default, and throws Error naming the
  // preset, key and value when it is not a number in range.
  int integer(const std::string& key, int min, int max) const;
  double number(const std::string& key, double min_exclusive) const;      // > min_exclusive
  double non_negative(const std::string& key) const;                      // >= 0
  std::vector<int> dims(const std::string& key) const;                    // "4x4x4"
  NetTransport transport() const;  // "transport": ib, roce or tcp
  const GpuSpec& gpu() const;      // "gpu": a name of gpu_table()
  const CpuSpec& cpu() const;      // "cpu": a name of cpu_table()
  // "nvls": 0 or 1, whether the NVSwitch reduces in the switch (NVLink SHARP); `capable` says
  // whether this server's NVSwitch can. Throws Error for nvls=1 given where it cannot.
  bool nvls(bool capable, const std::string& why_not) const;

 private:
  const std::string& raw(const std::string& key) const;
  std::string what(const std::string& key) const;  // "preset NAME: KEY", for messages
  [[noreturn]] void bad(const std::string& key, const std::string& expected) const;

  const PresetInfo& info_;
  std::map<std::string, std::string> given_;
};

}  // namespace colltune::topo::detail

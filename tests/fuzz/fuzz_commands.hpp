#pragma once
// The command-level fuzz targets (fuzz_commands.cpp): calibrate, compare, the step's --cost and
// what-if options, sweep's --vary.
#include <vector>

#include "fuzz_targets.hpp"

namespace colltune::fuzz {

void add_command_targets(std::vector<Target>& all);

}  // namespace colltune::fuzz

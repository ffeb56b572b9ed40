// TEMPORARY during initial development: replaced by the real subcommand.
#include "commands.hpp"

namespace colltune::cli {
void add_bench_command(CLI::App& /*app*/) {}
}  // namespace colltune::cli

#pragma once
// Each subcommand registers itself on the app; its callback throws colltune::Error for bad
// input, which main() turns into one line on stderr and exit status 2.
#include <CLI/CLI.hpp>

namespace colltune::cli {

void add_topo_command(CLI::App& app);      // topo show | validate | export   (topo_cmd.cpp)
void add_topo_detect_command(CLI::App& topo);  // topo detect: this job's machines (topo_detect_cmd.cpp)
void add_algos_command(CLI::App& app);     // algos: list the registry        (algos_cmd.cpp)
void add_bench_command(CLI::App& app);     // bench: nccl-tests style sweep   (bench_cmd.cpp)
void add_simulate_command(CLI::App& app);  // simulate: predicted collective  (simulate_cmd.cpp)
void add_step_command(CLI::App& app);      // step: predicted training step   (step_cmd.cpp)
void add_tune_command(CLI::App& app);      // tune: search and emit configs   (tune_cmd.cpp)
void add_sweep_command(CLI::App& app);     // sweep: vary, defaults and tuned  (sweep_cmd.cpp)
void add_calibrate_command(CLI::App& app); // calibrate: fit to measurements   (calibrate_cmd.cpp)
void add_compare_command(CLI::App& app);   // compare: measured vs predicted   (calibrate_cmd.cpp)

}  // namespace colltune::cli

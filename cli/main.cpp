// colltune: collective-algorithm simulator and autotuner.
#include <cstdio>
#include <exception>
#include <iostream>

#include "colltune/common/error.hpp"
#include "commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"colltune: collective-algorithm simulator and autotuner for data-parallel training"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "colltune 0.1.0");
  colltune::cli::add_topo_command(app);
  colltune::cli::add_algos_command(app);
  colltune::cli::add_bench_command(app);
  colltune::cli::add_simulate_command(app);
  colltune::cli::add_step_command(app);
  colltune::cli::add_tune_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "colltune: error: " << e.what() << "\n";
    return 2;
  } catch (const colltune::Error& e) {
    std::cerr << "colltune: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "colltune: internal error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}

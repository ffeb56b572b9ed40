// colltune: collective-algorithm simulator and autotuner.
#include <cstdio>
#include <exception>
#include <iostream>
#include <new>
#include <optional>
#include <string>

#include "colltune/common/error.hpp"
#include "colltune/common/heap.hpp"
#include "commands.hpp"
#include "options/options.hpp"
#include "options/output_guard.hpp"

namespace {

// Runs the command line; the exit status (docs/hardening.md "Exit statuses").
int run(CLI::App& app, int argc, char** argv) {
  namespace cli = colltune::cli;
  if (argc <= 1) {  // bare `colltune`: what it can do, not an error about a missing subcommand
    std::cout << app.help();
    return cli::kExitOk;
  }
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
    return cli::kExitBadInput;
  } catch (const cli::QuietExit& e) {
    return e.code;
  } catch (const colltune::CheckFailure& e) {
    std::cerr << "colltune: FAILED: " << e.what() << "\n";
    return cli::kExitCheckFailed;
  } catch (const colltune::Error& e) {
    std::cerr << "colltune: error: " << e.what() << "\n";
    return cli::kExitBadInput;
  } catch (const std::bad_alloc&) {
    // The limits keep every input within memory on a machine of the documented size; a smaller
    // allowance (ulimit -v, a container limit) can still run out. One line, no "internal".
    std::cerr << "colltune: error: out of memory (the input needs more than this process may allocate; "
                 "see docs/hardening.md, Limits)\n";
    return cli::kExitBadInput;
  } catch (const std::exception& e) {
    // Not bad input: a bug (a non-finite number reaching a writer included). Its own status, so
    // scripts can tell it from a mistake in the command line.
    std::cerr << "colltune: internal error: " << e.what() << "\n";
    return cli::kExitInternal;
  } catch (...) {
    std::cerr << "colltune: internal error: unknown exception\n";
    return cli::kExitInternal;
  }
  return cli::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  namespace cli = colltune::cli;
  colltune::keep_heap_slack();
  CLI::App app{"colltune: collective-algorithm simulator and autotuner for data-parallel training", "colltune"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "colltune 0.1.0");
  cli::add_topo_command(app);
  cli::add_algos_command(app);
  cli::add_bench_command(app);
  cli::add_simulate_command(app);
  cli::add_step_command(app);
  cli::add_tune_command(app);
  cli::add_sweep_command(app);
  cli::add_calibrate_command(app);
  cli::add_compare_command(app);
  cli::apply_option_rules(app);
  cli::StdoutGuard guard;  // every printed number finite (output_guard.hpp)
  const int status = run(app, argc, argv);
  if (const std::optional<std::string> line = guard.finish()) {
    std::cerr << "colltune: internal error: a non-finite number reached the output: " << *line << "\n";
    return cli::kExitInternal;
  }
  return status;
}

// colltune: collective-algorithm simulator and autotuner.
#include <cstdio>
#include <exception>
#if defined(__GLIBC__) && defined(__linux__)
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#endif
#include <iostream>
#include <new>
#include <optional>
#include <string>

#include "colltune/common/error.hpp"
#include "commands.hpp"
#include "options/options.hpp"
#include "options/output_guard.hpp"

namespace {

// Every reference-pricer run builds a schedule and the engine's state, tens of MB on 512 ranks,
// and frees them; glibc gives the freed top of each thread's heap back to the kernel at once,
// and the next run faults the same pages in again (a sixth of `tune`'s time on
// dgx-h100:nodes=64, in page faults and heap growth). A heap keeps 256 MiB of slack instead; the
// peak memory is the same within a few MB.
//
// The main thread's heap, where the machine, the schedules and the event simulation live, then
// grows by that slack at once, and asks for transparent huge pages on it (where the kernel
// grants them on request: /sys/kernel/mm/transparent_hugepage/enabled "madvise" or "always"):
// loading the 16,384-GPU fat-tree faulted in 23,000 pages of 4 KiB, 230-330 ms against 80 ms
// on a heap already faulted in; on 2 MiB pages it takes 75-120 ms. Without huge pages (or under
// a sanitizer's allocator) nothing changes.
void keep_heap_slack() {
#if defined(__GLIBC__) && defined(__linux__)
  constexpr std::size_t kSlack = std::size_t{256} << 20;
  constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;
  mallopt(M_TOP_PAD, static_cast<int>(kSlack));
  // Blocks under the mmap threshold come from the heap's top until it must grow, by the slack.
  char* const before = static_cast<char*>(sbrk(0));
  std::array<void*, 64> held{};
  for (void*& block : held) {
    if (static_cast<char*>(sbrk(0)) != before) break;
    block = std::malloc(std::size_t{64} << 10);
  }
  const auto from = (reinterpret_cast<std::uintptr_t>(before) + kHugePage - 1) & ~(kHugePage - 1);
  const auto to = reinterpret_cast<std::uintptr_t>(sbrk(0)) & ~(kHugePage - 1);
  if (to > from) (void)madvise(reinterpret_cast<void*>(from), to - from, MADV_HUGEPAGE);  // a hint
  for (void* block : held) std::free(block);
#endif
}

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
  keep_heap_slack();
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

#pragma once
// Rules every colltune command follows, in one place: how integer options are read, and the
// exit statuses (docs/hardening.md).
#include <CLI/CLI.hpp>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "colltune/common/output_files.hpp"

namespace colltune::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;  // colltune::CheckFailure: a check found wrong results
inline constexpr int kExitBadInput = 2;     // colltune::Error: bad input, or a run that failed (timeout)
inline constexpr int kExitInternal = 3;     // any other exception: a bug in colltune

// The exit status for an exception that ends a command.
int exit_status(const std::exception& e);

// Thrown by a command that has already said why it stops (an MPI rank other than 0, when every
// rank knows the same failure): main() exits with `code` without printing anything.
struct QuietExit {
  int code;
};

// Applied by main() to every option of every command after they are all registered, with
// common/parse.hpp's grammar: integer options accept plain decimal digits only, within 64 bits
// (CLI11 would read "010" as octal 8 and "0x10" as 16, and took 2^65), and unsigned ones refuse
// a minus sign (CLI11 would wrap "-1" to 2^64-1, which is how `bench --chunk -1`, `-f -2` and
// `tune --budget -1` ran with absurd values); real options take finite decimals only.
void apply_option_rules(CLI::App& app);

// A check for an integer option whose 0 once silently meant "the default" (`step --steps 0` ran
// 1,000 steps, `tune --budget 0` 30): a given value below `min` is refused in parse.hpp's wording.
CLI::Validator at_least(long long min);

// True when an MPI launcher (mpirun, srun, ...) started this process.
bool under_mpi_launcher();
// This process's rank as the launcher's environment says (OMPI_COMM_WORLD_RANK, PMI_RANK,
// PMIX_RANK), before MPI starts; 0 without a launcher.
int launch_rank();

// `--json [FILE]`, the same on every command: absent, the command prints its text; `--json` or
// `--json -`, it prints JSON on standard output instead; `--json FILE`, it prints its text and
// writes the JSON to FILE, one of the command's output files (OutputFiles: checked before the
// work, written with the others at the end, atomically). The JSON text comes from
// finite::json_text, so every number in it is finite.
struct JsonOutput {
  std::optional<std::string> destination;
  bool requested() const { return destination.has_value(); }
  bool to_stdout() const { return destination && *destination == "-"; }
  bool to_file() const { return requested() && !to_stdout(); }
  bool text_wanted() const { return !to_stdout(); }
  // --json FILE: declares FILE among `files` (checked now). Call before the command's work.
  void declare(OutputFiles& files) const;
  // --json FILE: stages `json` (a newline added) in `files`, for their commit.
  void stage(const std::string& json, OutputFiles& files) const;
  // --json or --json -: prints `json`. Call after the files' commit.
  void print(const std::string& json) const;
  // The end of a command's output: stage(json), files.commit(), print(json). `json` is only
  // used when JSON was requested.
  void finish(const std::string& json, OutputFiles& files) const;
};
CLI::Option* add_json_option(CLI::App& command, JsonOutput& output, const std::string& what);

// `OPTION SIZE` or `OPTION MIN:MAX` (MIN, 2 MIN, ... <= MAX), in whole fp32 elements: the
// payload sizes of simulate and sweep. Throws colltune::Error naming the option (a malformed
// size, one above the per-rank limit or not a whole number of 4-byte elements, MIN 0 or above MAX).
std::vector<std::size_t> fp32_sizes(const std::string& text, const std::string& option);

// --chunk SIZE (bytes with a unit, as everywhere: simulate, bench, step, tune's chunk_bytes) in
// whole elements of `elem_size` bytes named `elem_name`; 0 for an empty text (no chunking).
// Throws colltune::Error for a malformed size or one that is not a whole number of elements.
std::size_t chunk_elements(const std::string& text, std::size_t elem_size, const std::string& elem_name);

}  // namespace colltune::cli

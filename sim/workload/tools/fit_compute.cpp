// colltune_fit_compute DATA_DIR: fits the step model's achieved fractions to the published
// single-GPU throughput in DATA_DIR/published_throughput.csv (compute_fit.hpp) and writes
// DATA_DIR/achieved_fractions.csv (compiled into colltune: rebuild after running this) and
// DATA_DIR/fit_residuals.csv, then prints the error summary docs/step-model.md quotes.
// Deterministic: the same table gives the same files.
#include <filesystem>
#include <iostream>

#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"
#include "colltune/sim/compute_fit.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: colltune_fit_compute DATA_DIR (holding published_throughput.csv)\n";
    return 2;
  }
  try {
    const std::filesystem::path dir = argv[1];
    const auto rows = colltune::sim::load_published_throughput(dir / "published_throughput.csv");
    const colltune::sim::FitResult fit = colltune::sim::fit_achieved_fractions(rows);
    colltune::write_file_atomic(dir / "achieved_fractions.csv", colltune::sim::fractions_csv(fit));
    colltune::write_file_atomic(dir / "fit_residuals.csv", colltune::sim::residuals_csv(fit));
    std::cout << colltune::sim::fit_summary(fit);
  } catch (const colltune::Error& e) {
    std::cerr << "colltune_fit_compute: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}

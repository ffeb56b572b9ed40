#pragma once
// Bench internals: inputs whose reduction is exact in any order, and their reference result.
#include <cstddef>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "colltune/bench/bench.hpp"

namespace colltune::bench::detail {

// How many ranks contribute arithmetic to each element (see bench_check.cpp): the rank count,
// or fewer where more would leave the range in which the type is exact.
std::size_t exact_window(const BenchConfig& config, int nranks);
// Rank `rank`'s input: small integers (see bench_check.cpp) stored as `config.dtype`.
void fill_input(const BenchConfig& config, int rank, int nranks, void* buffer, std::size_t count);
// The exact allreduce of every rank's fill_input, as the front end returns it (avg scaled by
// 1/p, fp16 compression's rounding applied).
void fill_reference(const BenchConfig& config, int nranks, void* reference, std::size_t count);
// Elements whose bytes differ.
std::size_t count_wrong(const void* result, const void* reference, std::size_t count, std::size_t elem_size);

// "mpi" (MPI_Allreduce) and "nccl" (ncclAllReduce): not registry algorithms.
bool is_vendor_baseline(const std::string& algorithm);

// The rank layout of the bench: one host, or hosts of config.ranks_per_host consecutive ranks.
RankLayout layout_of(const BenchConfig& config, int nranks);

// A report before the sweep: the configuration, the rank and host counts, and on `root` the
// host memcpy yardstick (when config.measure_memcpy).
BenchReport host_report(const BenchConfig& config, int nranks, int nhosts, bool root);

// What every bench shares around the sweep: the table header, `sweep(sink)` (its rows become
// the report's), the footer and the JSON file. Only `root` prints to `out` (when non-null) and
// writes.
BenchReport run_report(BenchReport report, bool root, std::ostream* out,
                       const std::function<std::vector<BenchRow>(const RowSink&)>& sweep);

}  // namespace colltune::bench::detail

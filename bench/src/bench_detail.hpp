#pragma once
// Bench internals: inputs whose reduction is exact in any order, and their reference result.
#include <cstddef>

#include "colltune/bench/bench.hpp"

namespace colltune::bench::detail {

// Rank `rank`'s input: small integers (see bench_check.cpp) stored as `config.dtype`.
void fill_input(const BenchConfig& config, int rank, int nranks, void* buffer, std::size_t count);
// The exact allreduce of every rank's fill_input, as the front end returns it (avg scaled by
// 1/p, fp16 compression's rounding applied).
void fill_reference(const BenchConfig& config, int nranks, void* reference, std::size_t count);
// Elements whose bytes differ.
std::size_t count_wrong(const void* result, const void* reference, std::size_t count, std::size_t elem_size);

}  // namespace colltune::bench::detail

#pragma once
// Test-only reference interpreter of the Schedule semantics (schedule.hpp): run_data executes
// a schedule on per-rank int64 buffers, sequentially, with the same rendezvous progress rule
// as validate(). (Timing has one definition, sim/pricer.hpp; tests use it, not a copy.)
#include <cstdint>
#include <vector>

#include "colltune/collectives/registry.hpp"
#include "colltune/collectives/schedule.hpp"
#include "colltune/common/rank_layout.hpp"

namespace colltune::test {

// Input of rank r at element i: small integers, so every summation order is exact.
std::int64_t input_value(int rank, std::size_t i);
// Runs the schedule; returns the final buffers. Allgather ranks start with garbage (-7777)
// outside their owned block, helpers (Schedule::helpers) everywhere.
std::vector<std::vector<std::int64_t>> run_data(const coll::Schedule& s);
// Empty string when the buffers hold the collective's result, else a description.
std::string check_data(const coll::Schedule& s, const std::vector<std::vector<std::int64_t>>& bufs);

}  // namespace colltune::test

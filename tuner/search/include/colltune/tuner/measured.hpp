#pragma once
// The measured objective: the real fusion runtime over MPI replaying a workload, so the tuner
// can run online on a cluster under mpirun. One replayed step:
//   1. all ranks meet at a barrier; the forward pass is emulated by waiting forward_us;
//   2. the backward pass starts; gradient tensors become ready at their ready_us (wall clock);
//   3. Horovod's loop: every cycle time the ranks agree on the ready tensors (an MPI_Allreduce
//      MIN of each rank's count of ready tensors - the negotiation), pack them with
//      coll::plan_fusion up to the fusion threshold, copy each buffer in, allreduce it with the
//      candidate's algorithm / chunking / fp16 compression over coll::MpiCommunicator, copy it
//      back; then wait for the next cycle;
//   4. the step ends when every tensor is reduced and the backward pass is over.
// Step time = the slowest rank's (MPI_Allreduce MAX), so every rank sees the same value and a
// seeded strategy makes the same choices on every rank. The objective averages `iterations`
// steps after `warmup` ones.
#include <memory>
#include <vector>

#include "colltune/sim/workload.hpp"
#include "colltune/tuner/algo_table.hpp"
#include "colltune/tuner/objective.hpp"

namespace colltune::tuner {

struct MeasuredOptions {
  int warmup = 1;
  int iterations = 3;
  double timeout_s = 60.0;  // per allreduce
  // "auto" uses these per-size tables (from the cost model): with hierarchical=on the one
  // that includes per-host algorithms, with hierarchical=off the flat one; empty = ring for
  // every size.
  std::vector<SizeRange> auto_table;
  std::vector<SizeRange> auto_table_flat;
};

// This process's MPI rank and the world size (0 and 1 without MPI or before MPI_Init).
int mpi_world_rank();
int mpi_world_size();

// Needs MPI initialised (coll::MpiSession) and every rank calling evaluate() with the same
// candidates in the same order. Throws colltune::Error when built without MPI.
std::unique_ptr<Objective> make_measured_objective(const sim::Workload& workload, const MeasuredOptions& options);

}  // namespace colltune::tuner

#pragma once
// Failures: a host dies during a run of N steps; three ways to recover, priced side by side
// (docs/failures.md has every input, its default and where the default comes from).
//
// - elastic (Horovod elastic): the survivors notice after a timeout, roll back to the last
//   state.commit(), meet again (rendezvous), get the state broadcast from rank 0, and go on
//   without the host: the step re-priced by the step model on the machine minus that host, the
//   global batch smaller by its ranks' share.
// - checkpoint: the job is relaunched (a spare host takes the dead one's place), reads the last
//   checkpoint, and redoes the steps since; every checkpoint write stalls the run.
// - nothing: the job is lost at the failure; only the steps before it count.
// Steps are numbered 1..N; a failure at step S kills the host as step S starts, so S - 1 steps
// are complete.
#include <string>
#include <vector>

#include "colltune/sim/step_costs.hpp"
#include "colltune/sim/step_model.hpp"
#include "colltune/sim/workload.hpp"
#include "colltune/topology/topology.hpp"

namespace colltune::sim {

struct Failure {
  int host = -1;  // host index in the topology
  long step = 0;  // 1..run steps
};

// `--fail HOST:STEP`, HOST a host name or index. Throws colltune::Error for a host the topology
// does not have, or a step outside 1..run_steps.
Failure parse_failure(const std::string& text, const topo::Topology& topology, long run_steps);

struct FailureOptions {
  long run_steps = 0;
  std::vector<Failure> failures;
  long samples_per_rank = 1;     // per step (the batch size per GPU)
  double detect_s = 30;          // HOROVOD_GLOO_TIMEOUT_SECONDS' default
  double rendezvous_s = 10;      // an assumption (docs/failures.md)
  long commit_every = 100;       // elastic state.commit() every K steps
  long checkpoint_every = 1000;  // steps between checkpoints
  double state_bytes = 0;        // model + optimizer state; 0: default_state_bytes(workload)
  double storage_gbps = 2;       // checkpoint write and read, GB/s (1e9 B/s)
  double relaunch_s = 60;        // from the failure's detection to the new job's first step
  // Per rank of the whole machine, compute slowdown (--slow; empty: all 1). Every step runs at
  // the slowest living rank's speed, so a slow host's death speeds the survivors up.
  std::vector<double> rank_factor;
};

// Weights and one optimizer slot (SGD momentum), fp32: 2 x parameters x 4 bytes.
double default_state_bytes(const Workload& workload);

// One recovery over the run.
struct Recovery {
  double run_s = 0;       // wall time of the run (nothing: the planned run's time)
  double lost_s = 0;      // time that kept no training: detection, restart, state transfer,
                          // redone steps, checkpoint writes; nothing: the rest of the run
  double samples = 0;     // samples trained and kept
  double throughput = 0;  // samples / run_s
  long redone_steps = 0;  // steps run twice (rolled back)
  int final_ranks = 0;    // ranks at the end of the run (nothing: before the failure)
};

// The machine after an elastic recovery.
struct ElasticStage {
  long step = 0;            // the failure's step
  std::vector<int> hosts;   // host indices of the original topology that died at this step
  long resumed_from = 0;    // the step the state was rolled back to (last commit)
  int ranks = 0;            // ranks left
  double step_us = 0;       // the step on them
  double broadcast_us = 0;  // the state's broadcast from rank 0 among them
};

struct FailureResult {
  int ranks = 0;
  double step_us = 0;  // the step on the whole machine
  double state_bytes = 0;
  double checkpoint_write_s = 0, checkpoint_read_s = 0;
  double restart_broadcast_us = 0;                 // the restarted job's broadcast of the checkpoint, all ranks
  double baseline_s = 0, baseline_throughput = 0;  // the run without a failure or checkpoints
  std::vector<ElasticStage> stages;
  Recovery elastic, checkpoint, nothing;
};

// Prices the three recoveries. Throws colltune::Error for no failure, a non-positive count or
// cost, a host failing twice, or failures that leave no host.
FailureResult simulate_failures(const topo::Topology& topology, const StepCosts& costs, const Workload& workload,
                                const StepConfig& config, Engine engine, const FailureOptions& options);

// The time (us) to broadcast `bytes` from rank 0 to every rank of `topology`: a pipelined ring,
// priced as the analytical cost model's ring allgather of those bytes with each link's share
// raised from (p-1)/p of the bytes to all of them. 0 for one rank.
double state_broadcast_us(const topo::Topology& topology, double bytes);

}  // namespace colltune::sim

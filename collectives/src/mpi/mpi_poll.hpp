#pragma once
// Waiting on MPI requests under a timeout, shared by the transport and the MPI_Allreduce
// baseline: every wait in colltune has one, MPI's own waits have none.
#include <chrono>
#include <cstddef>
#include <thread>

namespace colltune::coll::detail {

// Spins on `done` (which tests MPI requests) until it returns true; yields once polling has
// gone on for a while so oversubscribed ranks let their peers run. Returns false on timeout.
template <class Done>
bool poll_until(Done&& done, double timeout_s) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  for (std::size_t polls = 0;; ++polls) {
    if (done()) return true;
    if ((polls & 255) == 255 && Clock::now() > deadline) return false;
    if (polls > 1024) std::this_thread::yield();
  }
}

}  // namespace colltune::coll::detail

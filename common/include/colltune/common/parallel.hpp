#pragma once
// Independent computations over indices 0..n-1 on several threads, with the result a serial loop
// would give: values in index order, and where some index throws, the exception of the lowest
// such index (the one a serial loop would have stopped at). Used where each index is priced on
// its own (a table's sizes, a grid's candidates) and the shared caches are thread-safe.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

namespace colltune {

// Threads to use for n items: `wanted` (0 = one per hardware thread), at most n, at least 1.
inline std::size_t worker_count(std::size_t n, std::size_t wanted = 0) {
  if (wanted == 0) wanted = std::thread::hardware_concurrency();
  return std::clamp<std::size_t>(wanted, 1, std::max<std::size_t>(n, 1));
}

// f(i) for every i < n, on up to `threads` threads (0 = one per hardware thread), in index order.
template <class F>
auto parallel_map(std::size_t n, F f, std::size_t threads = 0) -> std::vector<decltype(f(std::size_t{0}))> {
  using Value = decltype(f(std::size_t{0}));
  const std::size_t workers = worker_count(n, threads);
  std::vector<Value> out;
  out.reserve(n);
  if (workers == 1) {
    for (std::size_t i = 0; i < n; ++i) out.push_back(f(i));
    return out;
  }
  std::vector<std::optional<Value>> values(n);
  std::vector<std::exception_ptr> errors(n);
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t i = next++; i < n; i = next++) {
      try {
        values[i].emplace(f(i));
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  {
    std::vector<std::jthread> pool;
    for (std::size_t w = 1; w < workers; ++w) pool.emplace_back(work);
    work();
  }  // joined
  for (std::size_t i = 0; i < n; ++i) {
    if (errors[i]) std::rethrow_exception(errors[i]);
    out.push_back(std::move(*values[i]));
  }
  return out;
}

}  // namespace colltune

#pragma once
// Helpers for the runtime tests: inputs whose reduction is exact in any order, an independent
// host reference (plain scalar loops in double), hand-built schedules that exercise the
// transports without the algorithm registry, and a thread-safe failure log.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "colltune/collectives/dtype.hpp"
#include "colltune/collectives/element.hpp"
#include "colltune/collectives/half.hpp"
#include "colltune/collectives/reducer.hpp"
#include "colltune/collectives/schedule.hpp"

namespace colltune::test {

// x(r, i): small integers. prod uses {1, -1, 2} with at most ceil(p/5) twos per element, so
// products stay below 2^4 for p <= 17: exact in fp16, bf16 and the integers.
inline double input_value(coll::ReduceOp op, int rank, std::size_t i) {
  if (op == coll::ReduceOp::prod) {
    if ((i + static_cast<std::size_t>(rank)) % 5 == 0) return 2.0;
    return (i * 3 + static_cast<std::size_t>(rank)) % 2 ? -1.0 : 1.0;
  }
  return static_cast<double>((i * 7 + static_cast<std::size_t>(rank) * 3) % 9) - 4.0;
}

inline std::vector<std::byte> make_input(coll::DType dtype, coll::ReduceOp op, int rank, std::size_t count) {
  std::vector<std::byte> buf(count * coll::dtype_size(dtype));
  for (std::size_t i = 0; i < count; ++i) coll::store_element(dtype, buf.data(), i, input_value(op, rank, i));
  return buf;
}

// The allreduce of make_input over `nranks` ranks, computed in double (exact for these
// inputs). avg is the sum followed by coll::scale(1/p), the front end's definition.
inline std::vector<std::byte> make_reference(coll::DType dtype, coll::ReduceOp op, int nranks, std::size_t count) {
  std::vector<std::byte> buf(count * coll::dtype_size(dtype));
  for (std::size_t i = 0; i < count; ++i) {
    double acc = input_value(op, 0, i);
    for (int r = 1; r < nranks; ++r) {
      const double x = input_value(op, r, i);
      switch (op) {
        case coll::ReduceOp::sum:
        case coll::ReduceOp::avg: acc += x; break;
        case coll::ReduceOp::min: acc = std::min(acc, x); break;
        case coll::ReduceOp::max: acc = std::max(acc, x); break;
        case coll::ReduceOp::prod: acc *= x; break;
      }
    }
    coll::store_element(dtype, buf.data(), i, acc);
  }
  if (op == coll::ReduceOp::avg) coll::scale(dtype, buf.data(), count, 1.0 / nranks);
  return buf;
}

// Index of the first element whose bytes differ, or -1.
inline long long first_mismatch(const void* a, const void* b, std::size_t count, std::size_t elem_size) {
  for (std::size_t i = 0; i < count; ++i) {
    if (std::memcmp(static_cast<const char*>(a) + i * elem_size, static_cast<const char*>(b) + i * elem_size,
                    elem_size) != 0) {
      return static_cast<long long>(i);
    }
  }
  return -1;
}

// An allreduce schedule of p ranks with no steps yet, for tests to fill in by hand.
inline coll::Schedule hand_schedule(std::string name, int p, std::size_t count) {
  coll::Schedule s;
  s.algorithm = std::move(name);
  s.nranks = p;
  s.count = count;
  s.ranks.resize(static_cast<std::size_t>(p));
  return s;
}

// Ring allreduce built by hand (reduce-scatter then allgather, one block per rank), so the
// transports are tested independently of the registry's algorithms.
inline coll::Schedule hand_ring(int p, std::size_t count) {
  coll::Schedule s = hand_schedule("hand_ring", p, count);
  auto block = [&](int k) {
    const auto uk = static_cast<std::size_t>(((k % p) + p) % p);
    const std::size_t lo = count * uk / static_cast<std::size_t>(p), hi = count * (uk + 1) / static_cast<std::size_t>(p);
    return coll::Block{lo, hi - lo};
  };
  for (int r = 0; r < p; ++r) {
    const int next = (r + 1) % p, prev = (r + p - 1) % p;
    for (int phase = 0; phase < 2; ++phase) {
      for (int s_i = 0; s_i < p - 1; ++s_i) {
        coll::Step step;
        const int send_block = phase == 0 ? r - s_i : r + 1 - s_i;
        const int recv_block = phase == 0 ? r - s_i - 1 : r - s_i;
        step.ops.push_back({coll::OpKind::send, next, block(send_block)});
        step.ops.push_back({phase == 0 ? coll::OpKind::recv_reduce : coll::OpKind::recv_copy, prev, block(recv_block)});
        s.ranks[static_cast<std::size_t>(r)].push_back(step);
      }
    }
  }
  return s;
}

// Recursive doubling for p a power of two: every step exchanges the whole buffer with
// rank ^ 2^k, so each receive overlaps the step's send (the scratch-copy path).
inline coll::Schedule hand_recursive_doubling(int p, std::size_t count) {
  coll::Schedule s = hand_schedule("hand_rd", p, count);
  for (int r = 0; r < p; ++r) {
    for (int k = 1; k < p; k <<= 1) {
      coll::Step step;
      step.ops.push_back({coll::OpKind::send, r ^ k, {0, count}});
      step.ops.push_back({coll::OpKind::recv_reduce, r ^ k, {0, count}});
      s.ranks[static_cast<std::size_t>(r)].push_back(step);
    }
  }
  return s;
}

// Failures found on rank threads, reported by the test body.
class FailureLog {
 public:
  void add(std::string what) {
    std::lock_guard<std::mutex> lk(m_);
    if (failures_.size() < 20) failures_.push_back(std::move(what));
    ++count_;
  }
  std::size_t count() const { return count_; }
  std::string summary() const {
    std::string s;
    for (const auto& f : failures_) s += f + "\n";
    return s;
  }

 private:
  std::mutex m_;
  std::vector<std::string> failures_;
  std::size_t count_ = 0;
};

}  // namespace colltune::test

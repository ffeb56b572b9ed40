#pragma once
// Internals shared by allreduce.cpp and allreduce_fp16.cpp.
#include <cstddef>
#include <memory>
#include <string_view>

#include "colltune/collectives/allreduce.hpp"

namespace colltune::coll::detail {

// count x dtype size, or colltune::Error when that overflows.
std::size_t checked_bytes(std::size_t count, DType dtype, std::string_view what);
// Null buffers with bytes > 0, or partially overlapping in/out: colltune::Error.
void check_buffers(const void* in, const void* out, std::size_t bytes, std::string_view what);
// options.postscale, times 1/p for avg.
double effective_postscale(const Communicator& comm, const AllreduceOptions& options);
// The cached schedule of options.algorithm; colltune::Error when it is not an `expected` one.
std::shared_ptr<const Schedule> schedule_for(Communicator& comm, std::size_t count, const AllreduceOptions& options,
                                             Collective expected);
// Elements `rank` sends over the whole schedule.
std::size_t wire_elements_sent(const Schedule& schedule, int rank);

AllreduceStats allreduce_fp16(Communicator& comm, const void* in, void* out, std::size_t count,
                              const AllreduceOptions& options);

}  // namespace colltune::coll::detail

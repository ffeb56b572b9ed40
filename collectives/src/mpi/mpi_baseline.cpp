// The vendor baseline: MPI_Allreduce (as MPI_Iallreduce, so it waits under colltune's timeout
// like every other wait). Native MPI types and ops where MPI has them; fp16 and
// bf16 (which MPI lacks) travel as 16-bit words reduced by a user-defined op over
// coll::reduce. avg is MPI_SUM followed by 1/p, as in our own allreduce.
#include <algorithm>
#include <climits>
#include <cstdio>
#include <string>

#include "colltune/collectives/mpi.hpp"
#include "colltune/collectives/reducer.hpp"
#include "colltune/common/error.hpp"
#include "mpi_poll.hpp"

namespace colltune::coll {
namespace {

template <DType D, ReduceOp O>
void user_reduce(void* in, void* inout, int* len, MPI_Datatype* /*type*/) {
  reduce(D, O, inout, in, static_cast<std::size_t>(*len));
}

template <DType D>
MPI_User_function* user_function(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return &user_reduce<D, ReduceOp::sum>;
    case ReduceOp::min: return &user_reduce<D, ReduceOp::min>;
    case ReduceOp::max: return &user_reduce<D, ReduceOp::max>;
    case ReduceOp::prod: return &user_reduce<D, ReduceOp::prod>;
  }
  return nullptr;
}

MPI_Datatype native_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
    case DType::i32: return MPI_INT32_T;
    case DType::i64: return MPI_INT64_T;
    case DType::f16:
    case DType::bf16: return MPI_UINT16_T;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op native_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return MPI_SUM;
    case ReduceOp::min: return MPI_MIN;
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::prod: return MPI_PROD;
  }
  return MPI_OP_NULL;
}

// An MPI_Op for (dtype, op); a user-defined one (freed on destruction) for fp16/bf16.
class ScopedOp {
 public:
  ScopedOp(DType dtype, ReduceOp op) {
    if (dtype != DType::f16 && dtype != DType::bf16) {
      op_ = native_op(op);
      return;
    }
    MPI_User_function* fn = dtype == DType::f16 ? user_function<DType::f16>(op) : user_function<DType::bf16>(op);
    MPI_Op_create(fn, 1, &op_);
    owned_ = true;
  }
  ScopedOp(const ScopedOp&) = delete;
  ScopedOp& operator=(const ScopedOp&) = delete;
  ~ScopedOp() {
    if (owned_) MPI_Op_free(&op_);
  }
  MPI_Op get() const { return op_; }

 private:
  MPI_Op op_ = MPI_OP_NULL;
  bool owned_ = false;
};

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

}  // namespace

void mpi_allreduce(const MpiCommunicator& comm, const void* in, void* out, std::size_t count, DType dtype,
                   ReduceOp op, double timeout_s) {
  const ScopedOp mpi_op(dtype, op);
  const std::size_t es = dtype_size(dtype);
  // MPI counts are int: reduce pieces of at most INT_MAX elements.
  for (std::size_t done = 0; done < count;) {
    const std::size_t n = std::min(count - done, static_cast<std::size_t>(INT_MAX));
    auto* dst = static_cast<std::byte*>(out) + done * es;
    const void* src = in == out ? MPI_IN_PLACE : static_cast<const std::byte*>(in) + done * es;
    MPI_Request req = MPI_REQUEST_NULL;
    const int rc = MPI_Iallreduce(src, dst, static_cast<int>(n), native_type(dtype), mpi_op.get(), comm.comm(), &req);
    if (rc != MPI_SUCCESS) throw Error("rank " + std::to_string(comm.rank()) + ": MPI_Iallreduce failed (code " + std::to_string(rc) + ")");
    int test_rc = MPI_SUCCESS;
    const bool finished = detail::poll_until(
        [&] {
          int flag = 0;
          test_rc = MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
          return flag != 0 || test_rc != MPI_SUCCESS;
        },
        timeout_s);
    if (test_rc != MPI_SUCCESS) throw Error("rank " + std::to_string(comm.rank()) + ": MPI_Allreduce failed (code " + std::to_string(test_rc) + ")");
    // A collective cannot be cancelled: the request stays pending and the communicator is
    // unusable; the caller ends the job (the CLI calls MPI_Abort).
    if (!finished)
      throw TimeoutError("rank " + std::to_string(comm.rank()) + ": MPI_Allreduce timed out after " +
                         seconds_text(timeout_s) + " (a peer did not join)");
    done += n;
  }
  if (op == ReduceOp::avg) scale(dtype, out, count, 1.0 / static_cast<double>(comm.size()));
}

}  // namespace colltune::coll

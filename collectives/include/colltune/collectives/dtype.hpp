#pragma once
// Element types and reduction operators understood by reducers, executors and the simulator.
#include <cstddef>
#include <string_view>

namespace colltune::coll {

enum class DType { f32, f64, f16, bf16, i32, i64 };
enum class ReduceOp { sum, avg, min, max, prod };

std::size_t dtype_size(DType t);
// Names as nccl-tests prints them: float, double, half, bfloat16, int32, int64.
std::string_view to_string(DType t);
std::string_view to_string(ReduceOp op);
// Accept "fp32"/"float"/"f32", "fp64"/"double", "fp16"/"half", "bf16"/"bfloat16",
// "int32"/"i32", "int64"/"i64"; "sum","avg","min","max","prod". Throw colltune::Error.
DType parse_dtype(std::string_view name);
ReduceOp parse_reduce_op(std::string_view name);
bool is_floating(DType t);

}  // namespace colltune::coll

#include "colltune/collectives/dtype.hpp"

#include <array>
#include <string>

#include "colltune/common/error.hpp"

namespace colltune::coll {

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::i32: return 4;
    case DType::i64: return 8;
  }
  return 0;
}

std::string_view to_string(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::f16: return "half";
    case DType::bf16: return "bfloat16";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
  }
  return "?";
}

std::string_view to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::avg: return "avg";
    case ReduceOp::min: return "min";
    case ReduceOp::max: return "max";
    case ReduceOp::prod: return "prod";
  }
  return "?";
}

DType parse_dtype(std::string_view name) {
  struct Alias {
    std::string_view name;
    DType type;
  };
  static constexpr std::array<Alias, 16> aliases{{{"fp32", DType::f32},     {"float", DType::f32},
                                                  {"f32", DType::f32},      {"float32", DType::f32},
                                                  {"fp64", DType::f64},     {"double", DType::f64},
                                                  {"f64", DType::f64},      {"fp16", DType::f16},
                                                  {"half", DType::f16},     {"f16", DType::f16},
                                                  {"bf16", DType::bf16},    {"bfloat16", DType::bf16},
                                                  {"int32", DType::i32},    {"i32", DType::i32},
                                                  {"int64", DType::i64},    {"i64", DType::i64}}};
  for (const Alias& a : aliases) {
    if (a.name == name) return a.type;
  }
  throw Error("unknown data type '" + std::string(name) + "' (use fp32, fp64, fp16, bf16, int32 or int64)");
}

ReduceOp parse_reduce_op(std::string_view name) {
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::min, ReduceOp::max, ReduceOp::prod}) {
    if (to_string(op) == name) return op;
  }
  throw Error("unknown reduction '" + std::string(name) + "' (use sum, avg, min, max or prod)");
}

bool is_floating(DType t) { return t != DType::i32 && t != DType::i64; }

}  // namespace colltune::coll

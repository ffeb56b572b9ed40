#pragma once
// Internal: one measured row as calibrate's and compare's JSON write it.
#include <nlohmann/json.hpp>

#include "colltune/calibrate/calibrate.hpp"

namespace colltune::tuner {

// source, model, bytes; for an NCCL row NCCL's pick and NCCL's own time ("selected_by":
// "nccl"); measured, predicted (colltune's), relative error.
nlohmann::ordered_json row_json(const RowFit& row);

}  // namespace colltune::tuner

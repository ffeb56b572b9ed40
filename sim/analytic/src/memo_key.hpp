#pragma once
// Keys of the analytic side's memos (cost_model.cpp, pipeline_closed_form.cpp): the bytes of
// what a price depends on, appended in a fixed order.
#include <string>

namespace colltune::sim::detail {

// Appends the bytes of a plain value (the key is compared, never read back).
template <class T>
void append_raw(std::string& key, const T& value) {
  key.append(reinterpret_cast<const char*>(&value), sizeof value);
}

}  // namespace colltune::sim::detail

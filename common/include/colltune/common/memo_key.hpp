#pragma once
// Keys of memos (the analytic side's prices, NCCL's channel searches): the bytes of what a
// memoised value depends on, appended in a fixed order.
#include <string>

namespace colltune {

// Appends the bytes of a plain value (the key is compared, never read back).
template <class T>
void append_raw(std::string& key, const T& value) {
  key.append(reinterpret_cast<const char*>(&value), sizeof value);
}

// Appends several plain values, in order.
template <class... T>
void append_raw_all(std::string& key, const T&... values) {
  (append_raw(key, values), ...);
}

}  // namespace colltune

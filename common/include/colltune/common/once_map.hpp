#pragma once
// A memo that several threads may share and that computes each key once: the first thread to ask
// for a key computes its value while later askers of the same key wait for that value instead of
// computing it again (the tuner evaluates candidates in parallel, and neighbouring candidates ask
// for the same allreduce prices at the same moment). A value is what its computation returns, or
// the exception it throws, given to every asker.
//
// Bounded: when it holds `max_entries` keys it starts over (values already handed out stay
// valid). The prices memoised with it depend on the key alone, so starting over changes no
// result, only time.
//
// A computation may ask the memo for other keys but must never, through any chain, ask for its
// own key (it would wait for itself).
#include <cstddef>
#include <exception>
#include <future>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>

namespace colltune {

template <class Key, class Value, class Hash = std::hash<Key>>
class OnceMap {
 public:
  explicit OnceMap(std::size_t max_entries) : max_entries_(max_entries) {}

  // The value of `key`, computed by `compute()` (a callable returning Value) unless another
  // thread has computed it or is computing it.
  template <class Compute>
  Value get(const Key& key, Compute&& compute) {
    std::optional<std::promise<Value>> promise;
    std::shared_future<Value> value;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (const auto it = values_.find(key); it != values_.end()) {
        // A value computed: copied out under the lock, with no future to share (the tuner's
        // threads ask hundreds of thousands of times, nearly all for values long computed).
        if (it->second.ready) return *it->second.ready;
        value = it->second.pending;
      } else {
        if (values_.size() >= max_entries_) values_.clear();
        value = promise.emplace().get_future().share();
        values_.emplace(key, Entry{std::nullopt, value});
      }
    }
    if (promise) {
      try {
        Value computed = compute();
        promise->set_value(computed);
        keep_ready(key, std::move(computed));
      } catch (...) {
        promise->set_exception(std::current_exception());
      }
    }
    return value.get();
  }

  // Forgets every key (values already handed out stay valid; a computation under way still
  // hands its value to those waiting for it).
  void clear() {
    const std::lock_guard<std::mutex> lock(mutex_);
    values_.clear();
  }

  // Keys held now (for tests).
  std::size_t size() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return values_.size();
  }

 private:
  // A key's value once computed (`ready`), else its computation's future (`pending`), which also
  // carries an exception to every asker.
  struct Entry {
    std::optional<Value> ready;
    std::shared_future<Value> pending;
  };

  // Stores a computed value for the fast path, in place of its future (the askers waiting hold
  // their own copies of it). The key may have been forgotten meanwhile, or be under way again
  // after a clear: the value depends on the key alone.
  void keep_ready(const Key& key, Value computed) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (const auto it = values_.find(key); it != values_.end() && !it->second.ready) {
      it->second.ready = std::move(computed);
      it->second.pending = {};
    }
  }

  std::size_t max_entries_;
  mutable std::mutex mutex_;
  std::unordered_map<Key, Entry, Hash> values_;
};

}  // namespace colltune

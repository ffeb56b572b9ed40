#include "colltune/common/heap.hpp"

// Included first: they define __GLIBC__, which the rest is conditional on.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#if defined(__GLIBC__) && defined(__linux__)
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace colltune {

void keep_heap_slack() {
#if defined(__GLIBC__) && defined(__linux__)
  constexpr std::size_t kSlack = std::size_t{256} << 20;
  constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;
  mallopt(M_TOP_PAD, static_cast<int>(kSlack));
  // Blocks under the mmap threshold come from the heap's top until it must grow, by the slack.
  char* const before = static_cast<char*>(sbrk(0));
  std::array<void*, 64> held{};
  for (void*& block : held) {
    if (static_cast<char*>(sbrk(0)) != before) break;
    block = std::malloc(std::size_t{64} << 10);
  }
  const auto from = (reinterpret_cast<std::uintptr_t>(before) + kHugePage - 1) & ~(kHugePage - 1);
  const auto to = reinterpret_cast<std::uintptr_t>(sbrk(0)) & ~(kHugePage - 1);
  if (to > from) (void)madvise(reinterpret_cast<void*>(from), to - from, MADV_HUGEPAGE);  // a hint
  for (void* block : held) std::free(block);
#endif
}

}  // namespace colltune

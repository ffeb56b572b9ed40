// keep_heap_slack (common/heap.hpp), in a process of its own (a fresh heap): on glibc the main
// thread's heap grows by its 256 MiB of slack at once and asks for transparent huge pages on
// it; elsewhere, and under a sanitizer's allocator (which does not use the heap), it only
// returns.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "colltune/common/heap.hpp"

#if defined(__GLIBC__) && defined(__linux__)
#include <unistd.h>
#endif

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define COLLTUNE_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define COLLTUNE_SANITIZED 1
#endif
#endif

namespace colltune {
namespace {

#if defined(__GLIBC__) && defined(__linux__) && !defined(COLLTUNE_SANITIZED)
// The VmFlags of the mappings named [heap] in /proc/self/smaps, one line each ("hg":
// MADV_HUGEPAGE asked; the part of the heap below the first 2 MiB boundary is a mapping of its
// own, without it).
std::string heap_vm_flags() {
  std::ifstream smaps("/proc/self/smaps");
  std::string line, out;
  bool heap = false;
  while (std::getline(smaps, line)) {
    const std::string first = line.substr(0, line.find(' '));
    const bool range =
        first.find('-') != std::string::npos && first.find_first_not_of("0123456789abcdef-") == std::string::npos;
    if (range) heap = false;  // a mapping's first line: "start-end perms offset dev inode [name]"
    if (line.find(" [heap]") != std::string::npos) heap = true;
    if (heap && line.rfind("VmFlags:", 0) == 0) out += line + "\n";
  }
  return out;
}
#endif

TEST(HeapSlack, TheMainHeapGrowsByItsSlackOnHugePages) {
#if defined(__GLIBC__) && defined(__linux__) && !defined(COLLTUNE_SANITIZED)
  const char* const before = static_cast<const char*>(sbrk(0));
  keep_heap_slack();
  const char* const after = static_cast<const char*>(sbrk(0));
  EXPECT_GE(after - before, std::ptrdiff_t{255} << 20) << "the heap did not grow by its slack";
  if (std::filesystem::exists("/sys/kernel/mm/transparent_hugepage/enabled")) {
    EXPECT_NE(heap_vm_flags().find(" hg"), std::string::npos) << "no huge pages asked for:\n" << heap_vm_flags();
  }
  void* block = std::malloc(std::size_t{1} << 20);  // the heap still serves
  EXPECT_NE(block, nullptr);
  std::free(block);
#else
  keep_heap_slack();
  SUCCEED() << "no glibc heap to keep";
#endif
}

}  // namespace
}  // namespace colltune

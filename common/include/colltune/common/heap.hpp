#pragma once
// How a colltune process keeps its heap (glibc on Linux; elsewhere nothing).

namespace colltune {

// Every reference-pricer run builds a schedule and the engine's state, tens of MB on 512 ranks,
// and frees them; glibc gives the freed top of each thread's heap back to the kernel at once,
// and the next run faults the same pages in again (a sixth of `tune`'s time on
// dgx-h100:nodes=64, in page faults and heap growth). Each heap keeps 256 MiB of slack instead
// (M_TOP_PAD); the peak memory is the same within a few MB.
//
// The calling thread's heap (the main thread's: the machine, the schedules and the event
// simulation live there) then grows by that slack at once, and asks for transparent huge pages
// on it, where the kernel grants them on request (/sys/kernel/mm/transparent_hugepage/enabled
// "madvise" or "always"): loading the 16,384-GPU fat-tree (load_topology timed alone) faulted
// in 23,000 pages of 4 KiB, 230-330 ms, against 80 ms on a heap already faulted in; on 2 MiB
// pages it takes 75-120 ms. Through the CLI, `simulate --engine event --algo rhd --bytes 64MiB`
// on that machine: 0.78-1.22 s, against 1.18-1.27 s with huge pages disabled for the process.
// Without huge pages, or under a sanitizer's allocator, only the slack changes. Call it once, at
// the start of main().
void keep_heap_slack();

}  // namespace colltune

#pragma once
// Chrome trace output (the Trace Event Format JSON that chrome://tracing and Perfetto open) of
// an event simulation: one process track per rank, named "rank R", holding one "X" (complete)
// slice per send, receive and reduction, timestamps in microseconds. Slices of one rank that
// overlap in time (the ops of one step run together) are spread over threads of the rank's
// process ("rank R", "rank R #1", ...) so that each thread's slices nest, as Perfetto requires.
#include <filesystem>
#include <string>

#include "colltune/sim/event_sim.hpp"

namespace colltune::sim {

// The trace as a JSON document: {"traceEvents":[...],"displayTimeUnit":"ns","otherData":{...}}.
// `nranks` tracks are named even for ranks without slices. Throws colltune::Error when a slice
// names a rank outside [0, nranks).
std::string chrome_trace_json(const EventSimResult& result, int nranks, const std::string& title = "");

// Writes chrome_trace_json atomically (whole or not at all). Throws colltune::Error.
void write_chrome_trace(const std::filesystem::path& path, const EventSimResult& result, int nranks,
                        const std::string& title = "");

}  // namespace colltune::sim

// docs/hardware.md shows the hardware table's rows as the code has them: a row changed in the
// code and not in the page (or the other way round) fails here.
#include <gtest/gtest.h>

#include "colltune/topology/hardware.hpp"
#include "docs/doc_text.hpp"

namespace colltune::docs_test {
namespace {

std::string nvlink_cell(const topo::GpuSpec& g) {
  if (g.nvlink.generation == 0) return "none";
  return "NVLink" + std::to_string(g.nvlink.generation) + ", " + std::to_string(g.nvlink.links) + " × " +
         num(g.nvlink.link_gbps);
}

std::string gpu_row(const topo::GpuSpec& g) {
  return "| `" + g.name + "` | " + g.board + " | " + std::to_string(g.compute_capability) + " | " + num(g.memory_gbps) +
         " | " + num(g.reduce_gbps()) + " | " + nvlink_cell(g) + " | Gen" + std::to_string(g.pcie_gen) + " | " +
         num(g.peak.fp32) + " | " + num(g.peak.tf32, true) + " | " + num(g.peak.fp16) + " | " +
         num(g.peak.bf16, true) + " | " + num(g.peak.fp8, true) + " | " + g.amp_precision() + " | " + g.source + " |";
}

// Every row of the table is a line of the section, and the section has no other row.
template <class Rows, class Line>
void expect_rows(const std::string& body, const Rows& rows, Line line, const char* what) {
  std::size_t listed = 0;
  for (const auto& r : rows) {
    EXPECT_NE(body.find(line(r) + "\n"), std::string::npos) << what << ": docs/hardware.md lacks or differs from\n"
                                                            << line(r);
    ++listed;
  }
  EXPECT_EQ(table_rows(body), listed) << what << ": docs/hardware.md lists rows the code does not have";
}

TEST(HardwareDoc, GpuTableMatchesTheCode) {
  expect_rows(section(page("hardware.md"), "## GPUs"), topo::gpu_table(), gpu_row, "GPUs");
}

TEST(HardwareDoc, LinkNicAndCpuTablesMatchTheCode) {
  const std::string text = page("hardware.md");
  expect_rows(section(text, "## Links"), topo::nvlink_generations(), [](const topo::NvlinkGeneration& g) {
    return "| " + std::to_string(g.generation) + " | " + num(g.link_gbps) + " | " + std::to_string(g.links_per_gpu) +
           " | `" + g.first_gpu + "` | " + g.source + " |";
  }, "NVLink");
  expect_rows(section(text, "## NICs"), topo::nic_table(), [](const topo::NicSpec& n) {
    return "| `" + n.name + "` | " + n.description + " | " + num(n.gbit) + " | " + n.source + " |";
  }, "NICs");
  expect_rows(section(text, "## CPUs"), topo::cpu_table(), [](const topo::CpuSpec& c) {
    return "| `" + c.name + "` | " + c.description + " | " + num(c.memory_gbps) + " | " + num(c.socket_link_gbps) +
           " | `" + std::string(topo::to_string(c.nccl_cpu)) + "` | " + c.source + " |";
  }, "CPUs");
}

}  // namespace
}  // namespace colltune::docs_test

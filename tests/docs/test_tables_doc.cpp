// The pages of docs/ that list what the code registers list all of it: every registered
// algorithm has a row in docs/algorithms.md, every knob and output file in docs/tuner-tables.md,
// every key the topology writer emits in docs/topology-format.md (which documents the version
// it writes); docs/README.md indexes every page, and every link between pages resolves.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

#include "colltune/collectives/registry.hpp"
#include "colltune/topology/json_io.hpp"
#include "colltune/topology/presets.hpp"
#include "colltune/tuner/emit.hpp"
#include "colltune/tuner/knobs.hpp"
#include "docs/doc_text.hpp"

namespace colltune::docs_test {
namespace {

// "| `name` |": the first cell of a table row naming `name`.
bool has_row(const std::string& text, std::string_view name) {
  return text.find("\n| `" + std::string(name) + "` |") != std::string::npos;
}

TEST(TablesDoc, EveryRegisteredAlgorithmHasARow) {
  const std::string text = page("algorithms.md");
  for (const coll::Algorithm& a : coll::algorithms()) EXPECT_TRUE(has_row(text, a.id)) << "docs/algorithms.md lacks " << a.id;
}

TEST(TablesDoc, EveryKnobAndOutputFileHasARow) {
  const std::string text = page("tuner-tables.md");
  for (const tuner::Knob& k : tuner::knobs()) {
    EXPECT_TRUE(has_row(section(text, "## Knobs"), k.name)) << "docs/tuner-tables.md lacks knob " << k.name;
    EXPECT_NE(text.find("`" + std::string(k.json_key) + "`"), std::string::npos) << k.json_key;
  }
  // colltune.json's schema documents the chosen knobs too.
  const nlohmann::json schema = nlohmann::json::parse(read_text(COLLTUNE_TUNER_SCHEMA));
  for (const tuner::Knob& k : tuner::knobs())
    EXPECT_TRUE(schema["properties"]["chosen"]["properties"].contains(std::string(k.json_key)))
        << "tuner/schema/colltune.schema.json lacks chosen." << k.json_key;
  for (const tuner::OutputFile& f : tuner::output_files())
    EXPECT_TRUE(has_row(section(text, "## Output files"), f.name)) << "docs/tuner-tables.md lacks file " << f.name;
}

// Every key of `j` and of the objects inside it.
void collect_keys(const nlohmann::json& j, std::set<std::string>& keys) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      keys.insert(key);
      if (key != "calibration") collect_keys(value, keys);  // calibrate's own format
    }
  } else if (j.is_array()) {
    for (const auto& v : j) collect_keys(v, keys);
  }
}

// A topology using every key the format has: GPUs with their compute capability, switches
// that reduce (NVLink SHARP, SHARP), a GPU and transport, duplex links, and a calibration.
TEST(TablesDoc, EveryTopologyKeyIsDocumentedWithTheVersionWritten) {
  topo::Topology t = topo::make_preset("dgx-h100:nodes=2,sharp=1,transport=roce");
  t.calibration = R"({"fitted": {}})";
  std::set<std::string> keys{"comment"};  // accepted anywhere, never written
  collect_keys(nlohmann::json::parse(topo::to_json(t)), keys);
  for (const char* expected : {"compute_capability", "switch_reduction", "gpu", "transport", "duplex", "calibration"})
    EXPECT_TRUE(keys.count(expected)) << "the test topology does not exercise " << expected;
  const std::string text = page("topology-format.md");
  for (const std::string& key : keys) {
    const bool link_end = key == "from" || key == "to";  // one row: "| `from`, `to` |"
    const bool listed = has_row(text, key) || (link_end && text.find("\n| `from`, `to` |") != std::string::npos) ||
                        text.find("`\"" + key + "\"` key") != std::string::npos;
    EXPECT_TRUE(listed) << "docs/topology-format.md lacks the key " << key;
  }
  const std::string version = std::to_string(topo::kJsonFormatVersion);
  EXPECT_NE(text.find("## JSON format, version " + version + "\n"), std::string::npos);
  EXPECT_NE(text.find("\"version\": " + version + ","), std::string::npos) << "the example's version";
}

TEST(TablesDoc, TheIndexListsEveryPageAndEveryLinkResolves) {
  const std::string index = page("README.md");
  const std::regex link(R"(\]\(([A-Za-z0-9_.-]+\.md)(#[^)]*)?\))");
  for (const auto& entry : std::filesystem::directory_iterator(COLLTUNE_DOCS)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".md") continue;
    if (name != "README.md") {
      EXPECT_NE(index.find("\n| [" + name + "](" + name + ") |"), std::string::npos) << "docs/README.md does not index " << name;
    }
    const std::string text = page(name);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), link); it != std::sregex_iterator(); ++it) {
      const std::string target = (*it)[1].str();
      EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(COLLTUNE_DOCS) / target))
          << name << " links to " << target << ", which does not exist";
    }
  }
}

}  // namespace
}  // namespace colltune::docs_test

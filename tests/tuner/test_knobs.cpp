// The table of knobs: names and keys are unique and found by every spelling, each knob's --fix
// pins exactly it, enumeration covers every combination of the table's values, and the generic
// users (describe, the Bayesian encoding, colltune.json, the report) carry every knob.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "colltune/common/error.hpp"
#include "colltune/tuner/emit.hpp"
#include "colltune/tuner/knobs.hpp"
#include "colltune/tuner/strategy.hpp"
#include "tuner_test_util.hpp"

using namespace colltune;
using namespace colltune::tuner;

namespace {

// A value of each knob that its --fix accepts, and the candidate field it must set.
const std::map<std::string, std::string> kValid{{"fusion-threshold", "64MiB"}, {"cycle-time", "5ms"},
                                                {"fp16", "on"},               {"algorithm", "rhd"},
                                                {"chunk", "256KiB"},          {"hierarchical", "off"}};

}  // namespace

TEST(Knobs, NamesAndKeysAreUniqueAndFoundByEverySpelling) {
  std::set<std::string> names, keys, columns;
  for (const Knob& k : knobs()) {
    EXPECT_TRUE(names.insert(std::string(k.name)).second) << k.name;
    if (!k.alias.empty()) {
      EXPECT_TRUE(names.insert(std::string(k.alias)).second) << k.alias;
    }
    EXPECT_TRUE(keys.insert(std::string(k.json_key)).second) << k.json_key;
    EXPECT_TRUE(columns.insert(std::string(k.column)).second) << k.column;
    EXPECT_EQ(find_knob(k.name), &k);
    if (!k.alias.empty()) {
      EXPECT_EQ(find_knob(k.alias), &k);
    }
    std::string shouted(k.name);
    for (char& c : shouted) c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_EQ(find_knob(shouted), &k) << shouted;
    EXPECT_TRUE(kValid.count(std::string(k.name))) << "no test value for knob " << k.name;
  }
  EXPECT_EQ(find_knob("warp"), nullptr);
  EXPECT_EQ(knob_names().size(), knobs().size());
}

// Every knob has what the generic parts call; the encoding's functions exactly where it uses them.
TEST(Knobs, EachKnobHasTheFunctionsItsEncodingUses) {
  for (const Knob& k : knobs()) {
    for (const void* f : {reinterpret_cast<const void*>(k.fix), reinterpret_cast<const void*>(k.count),
                          reinterpret_cast<const void*>(k.assign), reinterpret_cast<const void*>(k.contains),
                          reinterpret_cast<const void*>(k.same), reinterpret_cast<const void*>(k.text),
                          reinterpret_cast<const void*>(k.cell), reinterpret_cast<const void*>(k.json)})
      EXPECT_NE(f, nullptr) << k.name;
    EXPECT_EQ(k.scalar != nullptr, k.encoding != KnobEncoding::one_hot) << k.name;
    EXPECT_EQ(k.one_hot != nullptr, k.encoding == KnobEncoding::one_hot) << k.name;
    EXPECT_EQ(k.values != nullptr, k.encoding == KnobEncoding::log_scale) << k.name;
  }
}

TEST(Knobs, EachFixPinsExactlyItsKnob) {
  for (const Knob& k : knobs()) {
    SearchSpace s = SearchSpace::defaults({"ring", "rhd"});
    const SearchSpace before = s;
    s.fix(std::string(k.name) + "=" + kValid.at(std::string(k.name)));
    EXPECT_TRUE(s.is_fixed(k.name));
    EXPECT_EQ(k.count(s), 1u) << k.name;
    for (const Knob& other : knobs()) {
      if (&other != &k) {
        EXPECT_EQ(other.count(s), other.count(before)) << k.name << " changed " << other.name;
      }
    }
    for (const Candidate& c : s.enumerate()) EXPECT_EQ(k.text(c), k.text(s.enumerate().front())) << k.name;
    SearchSpace bad = SearchSpace::defaults({"ring"});
    try {
      bad.fix(std::string(k.name) + "=@@");
      ADD_FAILURE() << k.name << "=@@ was accepted";
    } catch (const Error& e) {
      const std::string what = e.what();  // names the knob and the value
      EXPECT_EQ(what.rfind("--fix " + std::string(k.name), 0), 0u) << what;
      EXPECT_NE(what.find("@@"), std::string::npos) << what;
    }
  }
}

TEST(Knobs, EnumerationIsEveryCombinationOfTheTablesValues) {
  SearchSpace s = SearchSpace::defaults({"ring", "rhd"});
  s.hierarchical_algorithms = s.algorithms;  // every combination valid
  std::size_t product = 1;
  for (const Knob& k : knobs()) product *= k.count(s);
  const auto all = s.enumerate();
  EXPECT_EQ(all.size(), product);
  std::set<std::string> seen;
  for (const Candidate& c : all) {
    EXPECT_TRUE(s.contains(c));
    EXPECT_TRUE(seen.insert(describe(c)).second) << describe(c);
  }
  // The first knob varies slowest.
  EXPECT_EQ(all.front().fusion_threshold_bytes, all[1].fusion_threshold_bytes);
  EXPECT_NE(all.front().hierarchical, all[1].hierarchical);
}

TEST(Knobs, GenericUsersCarryEveryKnob) {
  const SearchSpace s = SearchSpace::defaults({"ring", "rhd"});
  const Candidate a{64 * MiB, 2000.0, true, "rhd", 1 * MiB, true};
  Candidate b = a;
  b.algorithm = "ring";
  std::size_t width = 0;
  for (const Knob& k : knobs()) {
    width += k.encoding == KnobEncoding::one_hot ? k.count(s) : 1;
    EXPECT_NE(describe(a).find(std::string(k.label) + "=" + k.text(a)), std::string::npos) << k.name;
    EXPECT_EQ(k.same(a, b), k.name != "algorithm") << k.name;
  }
  const auto x = encode(a, s);
  EXPECT_EQ(x.size(), width);
  for (double v : x) {
    EXPECT_GE(v, 0.0);
    EXPECT_LE(v, 1.0);
  }
  EXPECT_NE(encode(b, s), x);
  // colltune.json's chosen/baseline/top rows and the report's columns hold every knob.
  const auto t = topo::load_topology("flat:ranks=4");
  TuneOptions options;
  options.strategy = StrategyKind::random;
  options.budget = 3;
  const TuneResult r = test::tune_analytic(t, sim::load_workload(TUNER_TEST_DATA "/tiny_workload.json"), options);
  const auto doc = nlohmann::json::parse(emit_colltune_json(r));
  const std::string report = emit_report_html(r);
  for (const Knob& k : knobs()) {
    EXPECT_TRUE(doc["chosen"].contains(std::string(k.json_key))) << k.json_key;
    EXPECT_TRUE(doc["baseline"].contains(std::string(k.json_key))) << k.json_key;
    EXPECT_TRUE(doc["top"][0].contains(std::string(k.json_key))) << k.json_key;
    EXPECT_NE(report.find("<th>" + std::string(k.column) + "</th>"), std::string::npos) << k.column;
  }
}

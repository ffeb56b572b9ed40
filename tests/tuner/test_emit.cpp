// Emitters: Horovod YAML agrees with the env file, the NCCL tuner CSV follows its grammar, nccl.env
// loads colltune's tuner plugin by absolute path, colltune.json validates against its schema, the
// report is self-contained, and writing is all-or-nothing. Also where the plugin is found.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"
#include "colltune/tuner/emit.hpp"
#include "colltune/tuner/plugin_location.hpp"
#include "tuner_test_util.hpp"

using namespace colltune;
using namespace colltune::tuner;
namespace fs = std::filesystem;
using nlohmann::json;

using test::data_lines;
using test::parse_env;
using test::split_csv;

namespace {

// A per-size NCCL table (algorithm=auto), so that nccl_tuner.conf has rows.
const TuneResult& result() {
  static const TuneResult r = [] {
    const auto t = topo::load_topology("dgx-h100:nodes=2");
    TuneOptions options;
    options.fixes = {"algorithm=dbtree"};  // NCCL's tree at every size: a row for every range
    return test::tune_analytic(t, sim::load_workload("resnet50"), options);
  }();
  return r;
}

// A JSON Schema subset validator (type, enum, required, properties, items, local $ref):
// returns the first violation as "path: problem", or "" when the document conforms.
std::string validate(const json& doc, const json& schema, const json& root, const std::string& path) {
  if (schema.contains("$ref")) {
    const std::string ref = schema["$ref"];  // "#/$defs/name"
    return validate(doc, root.at(json::json_pointer(ref.substr(1))), root, path);
  }
  if (schema.contains("type")) {
    auto is = [&](const std::string& t) {
      return (t == "object" && doc.is_object()) || (t == "array" && doc.is_array()) ||
             (t == "string" && doc.is_string()) || (t == "boolean" && doc.is_boolean()) ||
             (t == "integer" && doc.is_number_integer()) || (t == "number" && doc.is_number()) ||
             (t == "null" && doc.is_null());
    };
    const json& types = schema["type"];
    bool ok = types.is_string() ? is(types.get<std::string>()) : false;
    if (types.is_array())
      for (const auto& t : types) ok = ok || is(t.get<std::string>());
    if (!ok) return path + ": expected type " + types.dump() + ", got " + doc.dump();
  }
  if (schema.contains("enum") && std::find(schema["enum"].begin(), schema["enum"].end(), doc) == schema["enum"].end())
    return path + ": " + doc.dump() + " not in enum";
  if (schema.contains("required"))
    for (const auto& key : schema["required"])
      if (!doc.contains(key.get<std::string>())) return path + ": missing required " + key.get<std::string>();
  if (schema.contains("properties") && doc.is_object())
    for (const auto& [key, sub] : schema["properties"].items())
      if (doc.contains(key))
        if (auto e = validate(doc[key], sub, root, path + "/" + key); !e.empty()) return e;
  if (schema.contains("items") && doc.is_array())
    for (std::size_t i = 0; i < doc.size(); ++i)
      if (auto e = validate(doc[i], schema["items"], root, path + "/" + std::to_string(i)); !e.empty()) return e;
  return "";
}

std::size_t occurrences(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

json load_schema() { return json::parse(read_file(TUNER_SCHEMA)); }

}  // namespace

TEST(Emit, HorovodYamlParsesAndAgreesWithTheEnvFile) {
  const YAML::Node yaml = YAML::Load(emit_horovod_yaml(result()));
  ASSERT_TRUE(yaml["params"]);
  const auto env = parse_env(emit_horovod_env(result()));
  const YAML::Node p = yaml["params"];
  for (const char* key : {"fusion_threshold_mb", "cycle_time_ms", "cache_capacity", "hierarchical_allreduce",
                          "hierarchical_allgather", "torus_allreduce"})
    EXPECT_TRUE(p[key]) << key;
  const double mb = p["fusion_threshold_mb"].as<double>();
  EXPECT_EQ(static_cast<std::size_t>(mb * 1024 * 1024), std::stoull(env.at("HOROVOD_FUSION_THRESHOLD")));
  EXPECT_EQ(std::stoull(env.at("HOROVOD_FUSION_THRESHOLD")), result().best.candidate.fusion_threshold_bytes);
  EXPECT_DOUBLE_EQ(p["cycle_time_ms"].as<double>(), std::stod(env.at("HOROVOD_CYCLE_TIME")));
  EXPECT_NEAR(p["cycle_time_ms"].as<double>(), result().best.candidate.cycle_time_us / 1000.0, 1e-9);
  EXPECT_EQ(p["hierarchical_allreduce"].as<bool>(), env.at("HOROVOD_HIERARCHICAL_ALLREDUCE") == "1");
  EXPECT_EQ(p["hierarchical_allgather"].as<bool>(), env.at("HOROVOD_HIERARCHICAL_ALLGATHER") == "1");
  EXPECT_EQ(p["torus_allreduce"].as<bool>(), env.at("HOROVOD_TORUS_ALLREDUCE") == "1");
  EXPECT_EQ(p["cache_capacity"].as<int>(), std::stoi(env.at("HOROVOD_CACHE_CAPACITY")));
  // fp16 is a recommendation comment, never a made-up key.
  for (const auto& [key, value] : env) EXPECT_EQ(key.find("FP16"), std::string::npos) << key;
  EXPECT_FALSE(p["fp16"]);
}

// horovodrun's fusion_threshold_mb is an integer: a threshold that is not a whole number of MiB
// cannot be written (and the space never holds one: --fix refuses it).
TEST(Emit, FractionalMegabytesAreRefused) {
  TuneResult r = result();
  r.best.candidate.fusion_threshold_bytes = 1536 * KiB;
  EXPECT_THROW(emit_horovod_yaml(r), Error);
  EXPECT_THROW(write_configs(fs::temp_directory_path() / "colltune_fractional_mb", r), Error);
  EXPECT_FALSE(fs::exists(fs::temp_directory_path() / "colltune_fractional_mb"));
  SearchSpace space = SearchSpace::defaults({"ring"});
  EXPECT_THROW(space.fix("fusion-threshold=1536KiB"), Error);
  space.fix("fusion-threshold=3MiB");
  EXPECT_EQ(space.fusion_thresholds, std::vector<std::size_t>{3 * MiB});
}

TEST(Emit, NcclTunerConfFollowsTheCsvGrammar) {
  const std::string text = emit_nccl_tuner_conf(result());
  const std::set<std::string> collectives{"broadcast", "reduce", "allgather", "reducescatter", "allreduce"};
  const std::set<std::string> algorithms{"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
  const std::set<std::string> protocols{"ll", "ll128", "simple"};
  const std::regex integer("^-?[0-9]+$");
  std::istringstream all(text);
  for (std::string line; std::getline(all, line);) EXPECT_LE(line.size(), 256u) << line;
  const auto lines = data_lines(text);
  ASSERT_FALSE(lines.empty());
  std::size_t next_min = 0;
  for (const auto& line : lines) {
    const auto f = split_csv(line);
    ASSERT_EQ(f.size(), 10u) << line;
    EXPECT_TRUE(collectives.count(f[0])) << line;
    EXPECT_TRUE(algorithms.count(f[3])) << line;
    EXPECT_TRUE(protocols.count(f[4])) << line;
    for (int i : {1, 2, 5, 6, 7, 8, 9}) EXPECT_TRUE(std::regex_match(f[static_cast<std::size_t>(i)], integer)) << line;
    const auto lo = std::stoull(f[1]), hi = std::stoull(f[2]);
    EXPECT_LE(lo, hi) << line;
    EXPECT_EQ(lo, next_min) << "gap or overlap before " << line;
    next_min = hi + 1;
    for (int i : {5, 6, 7, 8}) {
      const long v = std::stol(f[static_cast<std::size_t>(i)]);
      EXPECT_TRUE(v == -1 || v > 0) << line;
    }
    EXPECT_TRUE(f[9] == "-1" || f[9] == "0" || f[9] == "1") << line;
    EXPECT_EQ(std::stoi(f[6]), result().hosts);
    EXPECT_EQ(std::stoi(f[7]), result().ranks);
  }
  EXPECT_EQ(next_min - 1, kTableMaxBytes);
}

// nccl.env for a plugin found at /opt/colltune/lib, or not found.
const NcclEnvPaths kFound{"/work/out/nccl_tuner.conf",
                          {"/opt/colltune/lib/libcolltune-nccl-tuner.so", "installed with colltune in /opt/colltune/lib"}};
const NcclEnvPaths kNotFound{"/work/out/nccl_tuner.conf", {{}, "not found: no libcolltune-nccl-tuner.so anywhere"}};

// The tuned result with one NCCL algorithm at every size.
TuneResult one_algorithm() {
  TuneResult r = result();
  for (auto& range : r.nccl_table) {
    range.choice.algorithm = "nccl_ring";
    range.nccl_algorithm = "ring";
    range.protocol = "simple";
  }
  return r;
}

// Runs `script` in sh and returns its standard output.
std::string shell(const std::string& script) {
  std::string out;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(script.c_str(), "r"), &pclose);
  EXPECT_TRUE(pipe != nullptr);
  char buf[4096];
  for (std::size_t n; pipe && (n = std::fread(buf, 1, sizeof buf, pipe.get())) > 0;) out.append(buf, n);
  return out;
}

TEST(Emit, NcclEnvLoadsThePluginByAbsolutePath) {
  for (const TuneResult& r : {result(), one_algorithm()}) {
    const std::string text = emit_nccl_env(r, kFound);
    const auto env = parse_env(text);
    EXPECT_EQ(env.at("NCCL_TUNER_PLUGIN"), "/opt/colltune/lib/libcolltune-nccl-tuner.so");
    EXPECT_EQ(env.at("NCCL_TUNER_CONFIG_FILE"), "/work/out/nccl_tuner.conf");
    EXPECT_NE(text.find("# Plugin installed with colltune in /opt/colltune/lib.\n"), std::string::npos) << text;
    EXPECT_NE(text.find("NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING"), std::string::npos);
    // The plugin does per collective what NCCL_ALGO / NCCL_PROTO would do for all: those stay comments.
    EXPECT_FALSE(env.count("NCCL_ALGO") || env.count("NCCL_PROTO")) << text;
    for (const auto& [key, value] : env) EXPECT_EQ(key.rfind("NCCL_", 0), 0u) << key;
  }
  EXPECT_NE(emit_nccl_env(one_algorithm(), kFound).find("# NCCL_ALGO=Ring\n# "), std::string::npos);
}

TEST(Emit, NcclEnvWithoutThePluginSaysWhyAndKeepsTheGlobalSetting) {
  const std::string text = emit_nccl_env(result(), kNotFound);
  auto env = parse_env(text);
  EXPECT_FALSE(env.count("NCCL_TUNER_PLUGIN"));
  EXPECT_NE(text.find("# Plugin not found: no libcolltune-nccl-tuner.so anywhere.\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# NCCL_TUNER_PLUGIN=/path/to/libcolltune-nccl-tuner.so\n"), std::string::npos) << text;
  EXPECT_EQ(env.at("NCCL_TUNER_CONFIG_FILE"), "/work/out/nccl_tuner.conf");
  // One algorithm everywhere: without the plugin, the global setting is the way to get it.
  env = parse_env(emit_nccl_env(one_algorithm(), kNotFound));
  EXPECT_EQ(env.at("NCCL_ALGO"), "Ring");
  EXPECT_EQ(env.at("NCCL_PROTO"), "Simple");
}

// One algorithm in every row, but rows at some sizes only (an `auto` table that overrides NCCL
// where it gains): NCCL_ALGO would force it at the other sizes too, so it is not offered.
TEST(Emit, NcclEnvOffersNoGlobalSettingForRowsWithGaps) {
  TuneResult r = one_algorithm();
  r.nccl_table.erase(r.nccl_table.begin());
  ASSERT_FALSE(r.nccl_table.empty());
  for (const NcclEnvPaths& paths : {kFound, kNotFound}) {
    const std::string text = emit_nccl_env(r, paths);
    EXPECT_EQ(text.find("NCCL_ALGO="), std::string::npos) << text;
    EXPECT_EQ(text.find("NCCL_PROTO="), std::string::npos) << text;
    EXPECT_NE(text.find("# NCCL keeps its own choice at the sizes without a row: no NCCL_ALGO / NCCL_PROTO gives this "
                        "table without the plugin.\n"),
              std::string::npos)
        << text;
  }
}

TEST(Emit, NcclEnvPathsSurviveTheShell) {
  const NcclEnvPaths odd{"/tmp/a b/it's $HOME/nccl_tuner.conf",
                         {"/opt/col tune/lib/libcolltune-nccl-tuner.so", "installed with colltune in\n/opt"}};
  const std::string text = emit_nccl_env(result(), odd);
  const fs::path file = fs::temp_directory_path() / ("colltune-nccl-env-" + std::to_string(::getpid()));
  write_file_atomic(file, text);
  const std::string out = shell("set -a; . '" + file.string() + "' && printf '%s|%s' \"$NCCL_TUNER_PLUGIN\" " +
                                "\"$NCCL_TUNER_CONFIG_FILE\"");
  fs::remove(file);
  EXPECT_EQ(out, odd.plugin.path.string() + "|" + odd.table.string());
  EXPECT_NE(text.find("# Plugin installed with colltune in /opt.\n"), std::string::npos) << text;
}

TEST(Emit, ColltuneJsonValidatesAgainstItsSchema) {
  const json schema = load_schema();
  const json doc = json::parse(emit_colltune_json(result()));
  EXPECT_EQ(validate(doc, schema, schema, ""), "");
  EXPECT_EQ(doc["version"], kColltuneJsonVersion);
  EXPECT_DOUBLE_EQ(doc["predicted"]["step_time_ms"].get<double>(), result().best.step_time_us / 1000.0);
  EXPECT_DOUBLE_EQ(doc["speedup"].get<double>(), result().speedup());
  EXPECT_FALSE(doc["top"].empty());
  // The validator does reject what the schema forbids.
  json broken = doc;
  broken["chosen"].erase("cycle_time_ms");
  EXPECT_NE(validate(broken, schema, schema, ""), "");
  broken = doc;
  broken["algorithms"][0]["min_bytes"] = "zero";
  EXPECT_NE(validate(broken, schema, schema, ""), "");
  broken = doc;
  broken["version"] = 2;
  EXPECT_NE(validate(broken, schema, schema, ""), "");
}

TEST(Emit, ReportIsSelfContained) {
  const std::string html = emit_report_html(result());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_GE(occurrences(html, "<svg"), 4u);  // busbw, two heatmaps, timeline
  for (const char* banned : {"<script", " src=", "href=", "url(", "@import"})
    EXPECT_EQ(html.find(banned), std::string::npos) << banned;
  for (const char* section : {"bus bandwidth", "fusion threshold x cycle time", "fp16 compression on",
                              "timeline", "Top configurations", "What fp16 compression costs"})
    EXPECT_NE(html.find(section), std::string::npos) << section;
  // One busbw line per algorithm curve.
  EXPECT_NE(occurrences(html, "<polyline"), 0u);
  EXPECT_EQ(occurrences(html, "<polyline"), result().busbw.size());
}

// One table of output files: write_configs writes each entry, named and rendered by its entry,
// in table order, and the names are the table's.
TEST(Emit, WritesEveryOutputFileOfTheTable) {
  const fs::path dir = fs::temp_directory_path() / ("colltune-emit-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const auto files = write_configs(dir / "out", result());
  ASSERT_EQ(files.size(), output_files().size());
  ASSERT_EQ(emitted_file_names().size(), output_files().size());
  const EmitContext context{{dir / "out" / kNcclTunerConfFile, locate_nccl_tuner_plugin()}};
  std::set<std::string> names;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const OutputFile& f = output_files()[i];
    EXPECT_TRUE(names.insert(f.name).second) << f.name;
    EXPECT_FALSE(f.reader.empty()) << f.name;
    EXPECT_EQ(files[i].filename(), f.name);
    EXPECT_EQ(emitted_file_names()[i], f.name);
    EXPECT_EQ(read_file(files[i]), f.render(result(), context)) << f.name;
    EXPECT_NE(emitted_file_list().find(f.name), std::string::npos);
  }
  EXPECT_EQ(read_file(dir / "out" / "horovod.yaml"), emit_horovod_yaml(result()));
  EXPECT_EQ(read_file(dir / "out" / "colltune.json"), emit_colltune_json(result()));
  // nccl.env names the table just written and the plugin this build made.
  const auto env = parse_env(read_file(dir / "out" / "nccl.env"));
  EXPECT_EQ(env.at("NCCL_TUNER_CONFIG_FILE"), (dir / "out" / "nccl_tuner.conf").string());
  EXPECT_EQ(env.at("NCCL_TUNER_PLUGIN"), locate_nccl_tuner_plugin().path.string());
  fs::remove_all(dir);
}

TEST(Emit, ARelativeOutputDirectoryIsWrittenAbsoluteInNcclEnv) {
  const fs::path dir = fs::temp_directory_path() / ("colltune-emit-rel-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path cwd = fs::current_path();
  fs::current_path(dir);
  write_configs("./rel/../out/", result());
  fs::current_path(cwd);
  const auto env = parse_env(read_file(dir / "out" / "nccl.env"));
  EXPECT_EQ(env.at("NCCL_TUNER_CONFIG_FILE"), (dir / "out" / "nccl_tuner.conf").string());
  fs::remove_all(dir);
}

TEST(Emit, AFailedWriteLeavesNoFiles) {
  const fs::path dir = fs::temp_directory_path() / ("colltune-emit-fail-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  // The last file's destination is a directory: refused before anything is staged.
  fs::create_directories(dir / "report.html");
  EXPECT_THROW(write_configs(dir, result()), Error);
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    EXPECT_FALSE(entry.is_regular_file()) << entry.path();
  // An output path below a regular file cannot be created.
  write_file_atomic(dir / "plain", "x");
  EXPECT_THROW(write_configs(dir / "plain" / "out", result()), Error);
  fs::remove_all(dir);
}

// ---- where nccl.env finds colltune's NCCL tuner plugin ------------------------------------

namespace {

// A scratch tree: <root>/prefix/bin/colltune, and the plugin where a test puts it.
struct PluginTree {
  fs::path root = fs::temp_directory_path() / ("colltune-plugin-path-" + std::to_string(::getpid()));
  fs::path program = root / "prefix" / "bin" / "colltune";
  fs::path build_copy = root / "build" / "libcolltune-nccl-tuner.so";
  PluginTree() {
    fs::remove_all(root);
    touch(program);
  }
  ~PluginTree() { fs::remove_all(root); }
  static void touch(const fs::path& p) {
    fs::create_directories(p.parent_path());
    write_file_atomic(p, "");
  }
};

}  // namespace

TEST(NcclPluginPath, TheCopyInstalledBesideTheProgramComesFirst) {
  PluginTree t;
  PluginTree::touch(t.build_copy);
  PluginTree::touch(t.root / "prefix" / "lib64" / "libcolltune-nccl-tuner.so");
  const auto where = locate_nccl_tuner_plugin(t.program, t.build_copy);
  ASSERT_TRUE(where.found()) << where.how;
  EXPECT_EQ(where.path, t.root / "prefix" / "lib64" / "libcolltune-nccl-tuner.so");
  EXPECT_EQ(where.how, "installed with colltune in " + (t.root / "prefix" / "lib64").string());
}

TEST(NcclPluginPath, ElseTheBuildTreeCopy) {
  PluginTree t;
  PluginTree::touch(t.build_copy);
  fs::create_directories(t.root / "prefix" / "lib");  // a lib folder without the plugin
  const auto where = locate_nccl_tuner_plugin(t.program, t.build_copy);
  EXPECT_EQ(where.path, t.build_copy);
  EXPECT_NE(where.how.find("build tree"), std::string::npos) << where.how;
}

TEST(NcclPluginPath, NotFoundSaysWhereItLooked) {
  PluginTree t;
  const auto where = locate_nccl_tuner_plugin(t.program, t.build_copy);
  EXPECT_FALSE(where.found());
  EXPECT_EQ(where.how, "not found: no libcolltune-nccl-tuner.so in " + (t.root / "prefix" / "lib*").string() +
                           " beside " + t.program.string() + ", and no build-tree copy at " + t.build_copy.string());
}

TEST(NcclPluginPath, ThisBuildFindsItsPlugin) {
  // The test runs from the build tree: the plugin built with it (a dependency of the library).
  const auto where = locate_nccl_tuner_plugin();
  ASSERT_TRUE(where.found()) << where.how;
  EXPECT_TRUE(where.path.is_absolute());
  EXPECT_EQ(where.path.filename(), "libcolltune-nccl-tuner.so");
  EXPECT_TRUE(fs::is_regular_file(where.path));
}

// colltune topo show | validate | export | presets (detect: topo_detect_cmd.cpp): a few lines over the topology library.
#include <iostream>
#include <memory>

#include "colltune/common/atomic_file.hpp"
#include "colltune/common/error.hpp"
#include "colltune/topology/json_io.hpp"
#include "colltune/topology/presets.hpp"
#include "colltune/topology/report.hpp"
#include "colltune/topology/topology.hpp"
#include "commands.hpp"
#include "options/options.hpp"
#include "options/output_guard.hpp"

namespace colltune::cli {
namespace {

constexpr const char* kSpecHelp = "preset (e.g. dgx-h100:nodes=2), topology .json file or NCCL topology .xml file";

struct TopoOptions {
  std::string spec;
  std::string format = "json";
  std::string output;
  JsonOutput json;
};

void print_presets() {
  for (const topo::PresetInfo& p : topo::preset_catalog()) {
    std::cout << p.name << ": " << p.summary << "\n";
    for (const topo::PresetParam& param : p.params)
      std::cout << "    " << param.key << "=" << param.default_value << "  " << param.help << "\n";
  }
}

void export_topology(const TopoOptions& o) {
  OutputFiles files;
  if (!o.output.empty()) files.file("-o", o.output);
  const topo::Topology t = topo::load_topology(o.spec);
  const bool dot = o.format == "dot";
  const std::string text = dot ? topo::to_dot(t) : topo::to_json(t);
  if (!o.output.empty()) {
    files.stage(o.output, text);
    files.commit();
  } else if (dot) {
    std::cout << text;
  } else {
    print_checked_json(text.substr(0, text.size() - 1));  // to_json ends in a newline
  }
}

}  // namespace

void add_topo_command(CLI::App& app) {
  auto opts = std::make_shared<TopoOptions>();
  CLI::App* topo = app.add_subcommand("topo", "Show, validate and export machine topologies");
  topo->require_subcommand(1);

  CLI::App* show = topo->add_subcommand("show", "Summarise a topology: hosts, devices, links, ranks, slowest route");
  show->add_option("SPEC", opts->spec, kSpecHelp)->required();
  add_json_option(*show, opts->json, "The summary");
  show->callback([opts] {
    OutputFiles files;
    opts->json.declare(files);
    const topo::Topology t = topo::load_topology(opts->spec);
    opts->json.finish(opts->json.requested() ? topo::summary_json(t) : "", files);
    if (opts->json.text_wanted()) std::cout << topo::summary_text(t);
  });

  CLI::App* validate = topo->add_subcommand("validate", "Check a topology; print ok (exit 0) or the problem (exit 2)");
  validate->add_option("FILE", opts->spec, kSpecHelp)->required();
  validate->callback([opts] {
    topo::load_topology(opts->spec);
    std::cout << "ok\n";
  });

  CLI::App* exp = topo->add_subcommand("export", "Write a topology as colltune JSON or Graphviz DOT");
  exp->add_option("SPEC", opts->spec, kSpecHelp)->required();
  exp->add_option("--format", opts->format, "json (colltune topology format) or dot")
      ->check(CLI::IsMember({"json", "dot"}));
  exp->add_option("-o,--output", opts->output, "write to this file (atomically) instead of standard output");
  exp->callback([opts] { export_topology(*opts); });

  topo->add_subcommand("presets", "List the built-in presets and their parameters")->callback(print_presets);
  add_topo_detect_command(*topo);
}

}  // namespace colltune::cli

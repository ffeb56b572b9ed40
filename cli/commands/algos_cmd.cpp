// colltune algos [--json [FILE]]: lists the algorithm registry (id, collective, name, description).
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "colltune/common/finite.hpp"
#include "colltune/collectives/registry.hpp"
#include "commands.hpp"
#include "options/options.hpp"

namespace colltune::cli {
namespace {

void print_algorithms(const JsonOutput& json) {
  const auto& table = coll::algorithms();
  OutputFiles files;
  json.declare(files);
  if (json.requested()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& a : table) {
      out.push_back({{"id", a.id}, {"collective", std::string(coll::to_string(a.collective))}, {"name", a.name},
                     {"description", a.description}});
    }
    json.finish(finite::json_text(out, 2, "algos --json"), files);
    if (!json.text_wanted()) return;
  }
  std::size_t id_width = 2;
  for (const auto& a : table) id_width = std::max(id_width, a.id.size());
  std::cout << std::left << std::setw(static_cast<int>(id_width) + 2) << "id" << std::setw(16) << "collective"
            << "name: description\n";
  for (const auto& a : table) {
    std::cout << std::left << std::setw(static_cast<int>(id_width) + 2) << a.id << std::setw(16)
              << coll::to_string(a.collective) << a.name << ": " << a.description << "\n";
  }
}

}  // namespace

void add_algos_command(CLI::App& app) {
  auto json = std::make_shared<JsonOutput>();
  CLI::App* cmd = app.add_subcommand("algos", "List the collective algorithms: id, collective, name, description");
  add_json_option(*cmd, *json, "The list ({id, collective, name, description})");
  cmd->callback([json] { print_algorithms(*json); });
}

}  // namespace colltune::cli

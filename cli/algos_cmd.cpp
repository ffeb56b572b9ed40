// colltune algos [--json]: lists the algorithm registry (id, collective, name, description).
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "colltune/collectives/registry.hpp"
#include "commands.hpp"

namespace colltune::cli {
namespace {

void print_algorithms(bool json) {
  const auto& table = coll::algorithms();
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& a : table) {
      out.push_back({{"id", a.id}, {"collective", std::string(coll::to_string(a.collective))}, {"name", a.name},
                     {"description", a.description}});
    }
    std::cout << out.dump(2) << "\n";
    return;
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
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("algos", "List the collective algorithms: id, collective, name, description");
  cmd->add_flag("--json", *json, "Print a JSON array of {id, collective, name, description}");
  cmd->callback([json] { print_algorithms(*json); });
}

}  // namespace colltune::cli

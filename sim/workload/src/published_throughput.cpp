// The published single-GPU throughput table (compute_fit.hpp): reading and checking it.
#include <fstream>
#include <sstream>

#include "colltune/common/error.hpp"
#include "colltune/sim/compute_fit.hpp"
#include "colltune/topology/hardware.hpp"
#include "csv_table.hpp"

namespace colltune::sim {
namespace {

// Every field of one row, checked: a GPU of the hardware table, a precision class, a model spec
// that builds.
PublishedRow read_row(const detail::CsvTable& csv, std::size_t r) {
  PublishedRow row;
  const std::string where = csv.source + ": row " + std::to_string(r + 2);
  row.id = static_cast<int>(csv.number(r, "id"));
  row.model = csv.at(r, "model");
  row.gpu = csv.at(r, "gpu");
  row.precision = csv.at(r, "precision");
  row.use = csv.at(r, "use");
  row.source_url = csv.at(r, "source_url");
  if (!csv.at(r, "samples_per_s").empty()) row.samples_per_s = csv.number(r, "samples_per_s");
  try {
    if (!row.gpu.empty()) topo::find_gpu(row.gpu);
    if (row.precision != "fp32" && row.precision != "tf32" && row.precision != "amp")
      throw Error("precision '" + row.precision + "' is not fp32, tf32 or amp");
    if (!row.model.empty()) {
      const ProfileOptions o = parse_profile_options(row.model);
      model_architecture(row.model.substr(0, row.model.find(':')), o.seq, o.head);
    }
  } catch (const Error& e) {
    throw Error(where + ": " + e.what());
  }
  if (row.use.empty() || row.source_url.empty()) throw Error(where + ": use and source_url must not be empty");
  if (row.use == "fit" && (row.model.empty() || row.gpu.empty() || !(row.samples_per_s > 0)))
    throw Error(where + ": a fitted row needs a model, a GPU and a positive samples_per_s");
  return row;
}

}  // namespace

std::vector<PublishedRow> parse_published_throughput(std::string_view csv_text, std::string_view source) {
  const detail::CsvTable csv = detail::parse_csv(csv_text, source);
  std::vector<PublishedRow> rows;
  for (std::size_t r = 0; r < csv.rows.size(); ++r) rows.push_back(read_row(csv, r));
  return rows;
}

std::vector<PublishedRow> load_published_throughput(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot read");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_published_throughput(text.str(), path.string());
}

}  // namespace colltune::sim

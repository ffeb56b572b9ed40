// Parsers of nvidia-smi's text (detect.hpp): the `topo -m` matrix and the `--query-gpu` CSV.
// Pure functions over the text, so they are tested on outputs captured from real machines.
#include <algorithm>
#include <map>
#include <optional>
#include <sstream>

#include "colltune/common/error.hpp"
#include "colltune/common/parse.hpp"
#include "colltune/common/text.hpp"
#include "colltune/topology/detect.hpp"

namespace colltune::topo {
namespace {

// Drops the terminal escapes (ESC [ ... m) nvidia-smi underlines its header with.
std::string strip_escapes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {
      while (i < text.size() && text[i] != 'm') ++i;
      continue;
    }
    out += text[i];
  }
  return out;
}

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return "";
  return std::string(s.substr(b, s.find_last_not_of(" \t") - b + 1));
}

bool is_gpu_label(const std::string& t) {
  return t.size() > 3 && t.rfind("GPU", 0) == 0 && std::all_of(t.begin() + 3, t.end(), ::isdigit);
}

// The header: the first line whose first token is GPU0. Its matrix labels are the tokens before
// "CPU" (of "CPU Affinity"); the row labels to expect are the same.
std::optional<std::size_t> find_header(const std::vector<std::string>& lines) {
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::vector<std::string> t = text::words(lines[i]);
    if (!t.empty() && t[0] == "GPU0") return i;
  }
  return std::nullopt;
}

std::optional<PathCell> parse_cell(const std::string& t) {
  static const std::map<std::string, PathClass, std::less<>> kClasses{
      {"X", PathClass::self},    {"PIX", PathClass::pix}, {"PXB", PathClass::pxb}, {"PHB", PathClass::phb},
      {"NODE", PathClass::node}, {"SYS", PathClass::sys}, {"SOC", PathClass::sys}};
  if (auto it = kClasses.find(t); it != kClasses.end()) return PathCell{it->second, 0};
  if (t.size() > 2 && t.rfind("NV", 0) == 0) {
    const std::optional<int> n = parse::try_integer<int>(std::string_view(t).substr(2));
    if (n && *n > 0) return PathCell{PathClass::nvlink, *n};
  }
  return std::nullopt;
}

// "  NIC0: mlx5_0" lines of the NIC legend.
std::map<std::string, std::string> nic_legend(const std::vector<std::string>& lines) {
  std::map<std::string, std::string> names;
  for (const std::string& line : lines) {
    const std::vector<std::string> t = text::words(line);
    if (t.size() == 2 && t[0].size() > 4 && t[0].rfind("NIC", 0) == 0 && t[0].back() == ':')
      names[t[0].substr(0, t[0].size() - 1)] = t[1];
  }
  return names;
}

void fill_row(GpuTopoMatrix& m, std::size_t row, const std::vector<std::string>& t, std::size_t columns,
              const std::string& where) {
  if (t.size() < 1 + columns)
    throw Error(where + ": row " + t[0] + " has " + std::to_string(t.size() - 1) + " cells, the header names " +
                std::to_string(columns) + " devices");
  for (std::size_t c = 0; c < columns; ++c) {
    const std::optional<PathCell> cell = parse_cell(t[1 + c]);
    if (!cell)
      throw Error(where + ": row " + t[0] + ", column " + std::to_string(c + 1) + ": '" + t[1 + c] +
                  "' is not a connection (X, NV#, PIX, PXB, PHB, NODE, SYS)");
    if ((cell->path == PathClass::self) != (row == c))
      throw Error(where + ": row " + t[0] + ": 'X' (self) must be on the diagonal and only there");
    m.cells[row][c] = *cell;
  }
}

// NIC rows are missing in older versions: NIC-to-GPU cells are the GPU rows' transposed.
void complete_nic_rows(GpuTopoMatrix& m, const std::vector<bool>& seen) {
  const std::size_t n = m.cells.size();
  for (std::size_t r = 0; r < n; ++r) {
    if (seen[r]) continue;
    for (std::size_t c = 0; c < n; ++c) m.cells[r][c] = r == c ? PathCell{PathClass::self, 0} : m.cells[c][r];
  }
}

}  // namespace

std::string_view to_string(PathClass path) {
  switch (path) {
    case PathClass::self:
      return "X";
    case PathClass::nvlink:
      return "NV";
    case PathClass::pix:
      return "PIX";
    case PathClass::pxb:
      return "PXB";
    case PathClass::phb:
      return "PHB";
    case PathClass::node:
      return "NODE";
    case PathClass::sys:
      return "SYS";
    case PathClass::unknown:
      break;
  }
  return "unknown";
}

GpuTopoMatrix parse_nvidia_smi_topo(std::string_view text, const std::string& source) {
  const std::vector<std::string> lines = text::lines(strip_escapes(text));
  const std::optional<std::size_t> header = find_header(lines);
  if (!header)
    throw Error(source + ": not `nvidia-smi topo -m` output: no header line starting with GPU0 (" +
                (lines.empty() ? std::string("empty") : "first line: '" + trim(lines.front()) + "'") + ")");
  std::vector<std::string> labels;
  for (const std::string& t : text::words(lines[*header])) {
    if (t == "CPU" || t == "NUMA") break;
    labels.push_back(t);
  }
  const std::map<std::string, std::string> legend = nic_legend(lines);
  GpuTopoMatrix m;
  for (const std::string& l : labels) {
    if (is_gpu_label(l))
      m.gpus.push_back(l);
    else
      m.nics.push_back(legend.count(l) != 0 ? legend.at(l) : l);
  }
  if (!std::equal(m.gpus.begin(), m.gpus.end(), labels.begin()))
    throw Error(source + ": line " + std::to_string(*header + 1) + ": GPU columns must come before NIC columns");
  const std::size_t n = labels.size();
  m.cells.assign(n, std::vector<PathCell>(n));
  std::vector<bool> seen(n, false);
  for (std::size_t i = *header + 1; i < lines.size(); ++i) {
    const std::vector<std::string> t = text::words(lines[i]);
    if (t.empty()) continue;
    const auto at = std::find(labels.begin(), labels.end(), t[0]);
    if (at == labels.end()) break;  // the legend
    const auto row = static_cast<std::size_t>(at - labels.begin());
    if (seen[row]) throw Error(source + ": line " + std::to_string(i + 1) + ": row " + t[0] + " appears twice");
    fill_row(m, row, t, n, source + ": line " + std::to_string(i + 1));
    seen[row] = true;
  }
  for (std::size_t g = 0; g < m.gpus.size(); ++g)
    if (!seen[g]) throw Error(source + ": no row for " + m.gpus[g] + " (truncated output?)");
  complete_nic_rows(m, seen);
  return m;
}

std::vector<GpuInfo> parse_nvidia_smi_gpus(std::string_view text, const std::string& source) {
  std::vector<GpuInfo> gpus;
  const std::vector<std::string> lines = text::lines(std::string(text));
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (trim(lines[i]).empty()) continue;
    std::vector<std::string> fields;
    std::istringstream in(lines[i]);
    for (std::string f; std::getline(in, f, ',');) fields.push_back(trim(f));
    const std::string where = source + ": line " + std::to_string(i + 1);
    if (fields.size() != 3)
      throw Error(where + ": expected 'name, pci.bus_id, compute_cap', got '" + trim(lines[i]) + "'");
    GpuInfo g{fields[0], fields[1], 0};
    const std::string_view cc = fields[2];
    const auto dot = cc.find('.');
    const std::optional<int> major = parse::try_integer<int>(cc.substr(0, dot));
    const std::optional<int> minor = dot == std::string_view::npos ? std::nullopt : parse::try_integer<int>(cc.substr(dot + 1));
    // "[N/A]" (old drivers): left 0, unknown. "9.0" is 90.
    if (major && minor && *major >= 0 && *major < 100 && *minor >= 0 && *minor < 10) g.compute_capability = *major * 10 + *minor;
    if (g.bus_id.find(':') == std::string::npos)
      throw Error(where + ": '" + g.bus_id + "' is not a PCI bus id (domain:bus:device.function)");
    gpus.push_back(std::move(g));
  }
  return gpus;
}

}  // namespace colltune::topo

// The table of built-in model profiles, "name:key=value" specs, and the compute model that
// turns an architecture into a workload (see profiles.hpp).
#include "colltune/sim/profiles.hpp"

#include <cmath>
#include <functional>
#include <string>

#include "colltune/common/error.hpp"
#include "colltune/common/parse.hpp"
#include "profiles_detail.hpp"

namespace colltune::sim {
namespace {

using detail::BertHead;

struct ProfileEntry {
  ProfileInfo info;
  int default_seq = 0;  // 0: not a sequence model
  std::function<ModelArch(int seq, BertHead head)> build;
  bool has_head = false;  // takes head= (BERT)
};

const std::vector<ProfileEntry>& profile_table() {
  using namespace detail;
  // One profile a line (two for the longer ones): a table to read down.
  // clang-format off
  static const std::vector<ProfileEntry> table{
      {{"resnet50", "ResNet-50, 25.6 M parameters, 224x224 images"}, 0, [](int, BertHead) { return build_resnet(50); }},
      {{"resnet101", "ResNet-101, 44.5 M parameters, 224x224 images"}, 0,
       [](int, BertHead) { return build_resnet(101); }},
      {{"resnet152", "ResNet-152, 60.2 M parameters, 224x224 images"}, 0,
       [](int, BertHead) { return build_resnet(152); }},
      {{"vgg16", "VGG-16, 138.4 M parameters, 224x224 images"}, 0, [](int, BertHead) { return build_vgg16(); }},
      {{"inception-v3", "Inception-v3, 23.8 M parameters, 299x299 images"}, 0,
       [](int, BertHead) { return build_inception_v3(); }},
      {{"bert-base", "BERT-base pretraining, 110.1 M parameters, seq 128"}, 128,
       [](int seq, BertHead head) { return build_bert({"bert-base", 768, 12, 3072}, seq, head); }, true},
      {{"bert-large", "BERT-large pretraining, 336.2 M parameters, seq 128"}, 128,
       [](int seq, BertHead head) { return build_bert({"bert-large", 1024, 24, 4096}, seq, head); }, true},
      {{"gpt2", "GPT-2 small, 124.4 M parameters, seq 1024"}, 1024,
       [](int seq, BertHead) { return build_gpt2({"gpt2", 768, 12}, seq); }},
      {{"gpt2-medium", "GPT-2 medium, 354.8 M parameters, seq 1024"}, 1024,
       [](int seq, BertHead) { return build_gpt2({"gpt2-medium", 1024, 24}, seq); }},
      {{"gpt2-large", "GPT-2 large, 774.0 M parameters, seq 1024"}, 1024,
       [](int seq, BertHead) { return build_gpt2({"gpt2-large", 1280, 36}, seq); }},
      {{"gpt2-xl", "GPT-2 XL, 1557.6 M parameters, seq 1024"}, 1024,
       [](int seq, BertHead) { return build_gpt2({"gpt2-xl", 1600, 48}, seq); }},
  };
  // clang-format on
  return table;
}

std::string known_profiles() {
  std::string out;
  for (const ProfileEntry& e : profile_table()) out += (out.empty() ? "" : ", ") + e.info.name;
  return out;
}

const ProfileEntry* find_entry(std::string_view name) {
  for (const ProfileEntry& e : profile_table()) {
    if (e.info.name == name) return &e;
  }
  return nullptr;
}

const ProfileEntry& entry_or_throw(std::string_view name) {
  if (const ProfileEntry* e = find_entry(name)) return *e;
  throw Error("unknown model '" + std::string(name) + "' (known: " + known_profiles() +
              "; or a workload / Horovod timeline JSON file)");
}

[[noreturn]] void bad_option(std::string_view spec, std::string_view key, std::string_view value,
                             std::string_view why) {
  parse::refuse("model spec '" + parse::shown(spec) + "': " + std::string(key), value, why);
}

// Each within what a real run can be, so that no option drives a compute time to 0 or infinity.
void apply_option(std::string_view spec, const parse::SpecItem& item, ProfileOptions& options) {
  const std::string_view key = item.key, value = item.value;
  const std::string what = "model spec '" + parse::shown(spec) + "': " + item.key;
  if (key == "batch") {
    options.batch = parse::integer<int>(value, what, 1, 1 << 20);
  } else if (key == "seq") {
    options.seq = parse::integer<int>(value, what, 1, 1 << 20);
  } else if (key == "tflops") {
    options.tflops = parse::number(value, what, parse::Bounds::closed(1e-3, 1e6));
  } else if (key == "precision") {
    try {
      parse_precision(value);
    } catch (const Error& e) {
      bad_option(spec, key, value, e.what());
    }
    options.precision = std::string(value);
  } else if (key == "head") {
    if (value != "pretraining" && value != "squad") bad_option(spec, key, value, "must be pretraining or squad");
    options.head = std::string(value);
  } else if (key == "dtype") {
    try {
      options.grad_dtype = coll::parse_dtype(value);
    } catch (const Error& e) {
      bad_option(spec, key, value, std::string("is not a data type: ") + e.what());
    }
    if (!coll::is_floating(options.grad_dtype)) bad_option(spec, key, value, "gradients must be floating point");
  } else {
    parse::refuse("model spec '" + parse::shown(spec) + "'", key, "is not a known option (batch, seq, tflops, precision, head, dtype)");
  }
}

}  // namespace

std::size_t ModelArch::total_params() const {
  std::size_t total = 0;
  for (const Layer& layer : layers) {
    for (const ParamTensor& p : layer.params) total += p.count;
  }
  return total;
}

double ModelArch::forward_flops_per_sample() const {
  double total = 0;
  for (const Layer& layer : layers) total += layer.forward_flops;
  return total;
}

const std::vector<ProfileInfo>& profiles() {
  static const std::vector<ProfileInfo> infos = [] {
    std::vector<ProfileInfo> out;
    for (const ProfileEntry& e : profile_table()) out.push_back(e.info);
    return out;
  }();
  return infos;
}

bool is_profile_spec(std::string_view spec) { return find_entry(spec.substr(0, spec.find(':'))) != nullptr; }

KindWork work_by_kind(const ModelArch& arch) {
  KindWork w;
  for (const Layer& layer : arch.layers) {
    switch (layer.kind) {
      case LayerKind::convolution: w.conv_flops += layer.forward_flops; break;
      case LayerKind::matmul: w.matmul_flops += layer.forward_flops; break;
      case LayerKind::memory_bound: w.memory_elems += layer.forward_elems; break;
    }
  }
  return w;
}

ModelArch model_architecture(std::string_view name, int seq, std::string_view head) {
  const ProfileEntry& entry = entry_or_throw(name);
  if (entry.default_seq == 0 && seq != 0) {
    throw Error("model '" + std::string(name) + "' is not a sequence model: seq does not apply");
  }
  if (!entry.has_head && !head.empty())
    throw Error("model '" + std::string(name) + "': head= applies to BERT only");
  if (!head.empty() && head != "pretraining" && head != "squad")
    throw Error("model '" + std::string(name) + "': head=" + std::string(head) + " must be pretraining or squad");
  return entry.build(seq != 0 ? seq : entry.default_seq, head == "squad" ? BertHead::squad : BertHead::pretraining);
}

namespace {

bool positive(double v) { return v > 0 && std::isfinite(v); }

// Forward time of one layer for one sample, us (1 TFLOP/s = 1e6 FLOP/us, 1 GB/s = 1e3 B/us).
double layer_us(const Layer& layer, const ComputeRates& r) {
  switch (layer.kind) {
    case LayerKind::convolution: return layer.forward_flops / (r.conv_tflops * 1e6);
    case LayerKind::matmul: return layer.forward_flops / (r.matmul_tflops * 1e6);
    case LayerKind::memory_bound:
      return r.memory_gbps > 0 ? layer.forward_elems * static_cast<double>(r.activation_bytes) / (r.memory_gbps * 1e3)
                               : 0;
  }
  return 0;
}

}  // namespace

// Forward: the sum of layer times. Backward: 2x forward per layer, walked in reverse layer
// order; each gradient is ready when the backward work done so far (its own layer included)
// has run. The last gradient is therefore ready exactly when the backward pass ends.
Workload make_workload(const ModelArch& arch, int batch, const ComputeRates& rates, coll::DType grad_dtype) {
  if (batch <= 0) throw Error(arch.name + ": batch " + std::to_string(batch) + " must be positive");
  if (!positive(rates.conv_tflops) || !positive(rates.matmul_tflops) || !(rates.memory_gbps >= 0)) {
    throw Error(arch.name + ": compute rates must be positive numbers (tflops " + std::to_string(rates.matmul_tflops) +
                ")");
  }
  Workload w;
  w.name = arch.name;
  double backward_us = 0;
  for (const Layer& layer : arch.layers) w.forward_us += layer_us(layer, rates) * batch;
  for (auto layer = arch.layers.rbegin(); layer != arch.layers.rend(); ++layer) {
    backward_us += 2.0 * layer_us(*layer, rates) * batch;
    for (auto p = layer->params.rbegin(); p != layer->params.rend(); ++p) {
      w.tensors.push_back({p->name, p->count, grad_dtype, backward_us});
    }
  }
  w.backward_us = backward_us;
  return w;
}

Workload make_workload(const ModelArch& arch, int batch, double tflops, coll::DType grad_dtype) {
  if (!positive(tflops)) throw Error(arch.name + ": tflops " + std::to_string(tflops) + " must be a positive number");
  return make_workload(arch, batch, uniform_rates(tflops), grad_dtype);
}

Workload make_profile(std::string_view name, const ProfileOptions& options) {
  const ModelArch arch = model_architecture(name, options.seq, options.head);
  ComputeRates rates;
  if (options.tflops > 0) {
    rates = uniform_rates(options.tflops);
  } else {
    const topo::GpuSpec& gpu = topo::find_gpu(options.gpu, "model " + std::string(name));
    rates = compute_rates(gpu, options.precision.empty() ? default_precision(gpu) : parse_precision(options.precision));
  }
  return make_workload(arch, options.batch > 0 ? options.batch : arch.default_batch, rates, options.grad_dtype);
}

ProfileOptions parse_profile_options(std::string_view spec, std::string_view gpu) {
  const std::size_t colon = spec.find(':');
  entry_or_throw(spec.substr(0, colon));
  ProfileOptions options;
  options.gpu = std::string(gpu);
  if (colon != std::string_view::npos) {
    for (const parse::SpecItem& item : parse::split_items(spec.substr(colon + 1), "model spec '" + parse::shown(spec) + "'"))
      apply_option(spec, item, options);
  }
  return options;
}

Workload parse_profile_spec(std::string_view spec, std::string_view gpu) {
  Workload w = make_profile(spec.substr(0, spec.find(':')), parse_profile_options(spec, gpu));
  w.name = std::string(spec);  // keeps the options visible in reports
  return w;
}

}  // namespace colltune::sim

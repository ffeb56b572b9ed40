// Convolutional profiles derived layer by layer: ResNet-50/101/152 (torchvision v1.5) and
// VGG-16. Parameter names follow torchvision's state_dict so a profile can be compared with a
// real model's parameter list.
#include <array>
#include <string>

#include "colltune/common/error.hpp"
#include "profiles_detail.hpp"

namespace colltune::sim::detail {
namespace {

// The activation tensor flowing between layers (one sample).
struct FeatureMap {
  std::size_t channels = 0;
  std::size_t height = 0;
  std::size_t width = 0;
};

// Output extent of a convolution or pooling window: floor((in + 2*pad - kernel) / stride) + 1.
std::size_t window_out(std::size_t in, std::size_t kernel, std::size_t stride, std::size_t pad) {
  return (in + 2 * pad - kernel) / stride + 1;
}

struct ConvSpec {
  std::size_t out_channels = 0;
  std::size_t kernel = 1;
  std::size_t stride = 1;
  std::size_t pad = 0;
  bool bias = false;
};

// Appends layers to an architecture while tracking the feature map shape.
class CnnBuilder {
 public:
  explicit CnnBuilder(ModelArch& arch) : arch_(arch) {}

  // Convolution: weight cout*cin*k*k (+ bias cout); FLOPs 2*k*k*cin*cout per output pixel.
  FeatureMap conv(const std::string& name, const FeatureMap& in, const ConvSpec& spec) {
    FeatureMap out{spec.out_channels, window_out(in.height, spec.kernel, spec.stride, spec.pad),
                   window_out(in.width, spec.kernel, spec.stride, spec.pad)};
    const std::size_t weights = spec.out_channels * in.channels * spec.kernel * spec.kernel;
    Layer layer{name, {{name + ".weight", weights}}, 0, LayerKind::convolution, 0};
    if (spec.bias) layer.params.push_back({name + ".bias", spec.out_channels});
    layer.forward_flops = 2.0 * static_cast<double>(weights) * static_cast<double>(out.height * out.width);
    arch_.layers.push_back(std::move(layer));
    return out;
  }

  // Batch norm: learnable scale (weight) and shift (bias) per channel; the running statistics
  // are buffers, not gradients. Memory-bound: it reads the feature map and writes it back
  // (2 x C x H x W elements per sample); its FLOPs are not counted.
  void batch_norm(const std::string& name, const FeatureMap& in) {
    const double elems = 2.0 * static_cast<double>(in.channels * in.height * in.width);
    arch_.layers.push_back(
        {name, {{name + ".weight", in.channels}, {name + ".bias", in.channels}}, 0, LayerKind::memory_bound, elems});
  }

  // Fully connected: weight out*in + bias out; FLOPs 2*in*out.
  void linear(const std::string& name, std::size_t in, std::size_t out) {
    arch_.layers.push_back({name, {{name + ".weight", in * out}, {name + ".bias", out}},
                            2.0 * static_cast<double>(in * out), LayerKind::matmul, 0});
  }

  static FeatureMap pool(const FeatureMap& in, std::size_t kernel, std::size_t stride, std::size_t pad) {
    return {in.channels, window_out(in.height, kernel, stride, pad), window_out(in.width, kernel, stride, pad)};
  }

 private:
  ModelArch& arch_;
};

constexpr std::size_t kBottleneckExpansion = 4;

// One bottleneck block: 1x1 reduce, 3x3 (carrying the stride), 1x1 expand by 4, plus a 1x1
// projection of the input when the shape changes. Returns the block's output.
FeatureMap bottleneck(CnnBuilder& b, const std::string& name, const FeatureMap& in, std::size_t planes,
                      std::size_t stride) {
  FeatureMap x = b.conv(name + ".conv1", in, {planes, 1, 1, 0, false});
  b.batch_norm(name + ".bn1", x);
  x = b.conv(name + ".conv2", x, {planes, 3, stride, 1, false});
  b.batch_norm(name + ".bn2", x);
  x = b.conv(name + ".conv3", x, {planes * kBottleneckExpansion, 1, 1, 0, false});
  b.batch_norm(name + ".bn3", x);
  if (stride != 1 || in.channels != planes * kBottleneckExpansion) {
    const FeatureMap shortcut =
        b.conv(name + ".downsample.0", in, {planes * kBottleneckExpansion, 1, stride, 0, false});
    b.batch_norm(name + ".downsample.1", shortcut);
  }
  return x;
}

std::array<int, 4> resnet_blocks(int depth) {
  switch (depth) {
    case 50: return {3, 4, 6, 3};
    case 101: return {3, 4, 23, 3};
    case 152: return {3, 8, 36, 3};
    default: throw Error("resnet depth " + std::to_string(depth) + " is not one of 50, 101, 152");
  }
}

}  // namespace

ModelArch build_resnet(int depth) {
  const std::array<int, 4> blocks = resnet_blocks(depth);
  ModelArch arch;
  arch.name = "resnet" + std::to_string(depth);
  arch.description = "ResNet-" + std::to_string(depth) + " (torchvision v1.5), 224x224 images";
  arch.default_batch = 64;
  CnnBuilder b(arch);
  FeatureMap x = b.conv("conv1", {3, 224, 224}, {64, 7, 2, 3, false});
  b.batch_norm("bn1", x);
  x = CnnBuilder::pool(x, 3, 2, 1);  // max pool 3x3 stride 2: 112 -> 56
  std::size_t planes = 64;
  for (std::size_t stage = 0; stage < blocks.size(); ++stage) {
    for (int block = 0; block < blocks[stage]; ++block) {
      const std::size_t stride = (stage > 0 && block == 0) ? 2 : 1;
      const std::string name = "layer" + std::to_string(stage + 1) + "." + std::to_string(block);
      x = bottleneck(b, name, x, planes, stride);
    }
    planes *= 2;
  }
  b.linear("fc", x.channels, 1000);  // after global average pooling
  return arch;
}

ModelArch build_vgg16() {
  ModelArch arch;
  arch.name = "vgg16";
  arch.description = "VGG-16 (torchvision, no batch norm), 224x224 images";
  arch.default_batch = 64;
  CnnBuilder b(arch);
  // Channel widths of the 13 3x3 convolutions; 0 marks a 2x2 max pool (torchvision "D").
  constexpr std::array<std::size_t, 18> config{64, 64, 0, 128, 128, 0, 256, 256, 256, 0,
                                               512, 512, 512, 0, 512, 512, 512, 0};
  FeatureMap x{3, 224, 224};
  std::size_t index = 0;  // position in torchvision's `features` Sequential (ReLUs included)
  for (std::size_t width : config) {
    if (width == 0) {
      x = CnnBuilder::pool(x, 2, 2, 0);
      index += 1;
    } else {
      x = b.conv("features." + std::to_string(index), x, {width, 3, 1, 1, true});
      index += 2;  // conv + ReLU
    }
  }
  const std::size_t flat = x.channels * x.height * x.width;  // 512*7*7 = 25088
  b.linear("classifier.0", flat, 4096);
  b.linear("classifier.3", 4096, 4096);
  b.linear("classifier.6", 4096, 1000);
  return arch;
}

}  // namespace colltune::sim::detail

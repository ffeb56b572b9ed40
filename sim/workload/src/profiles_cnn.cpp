// Convolutional profiles derived layer by layer: ResNet-50/101/152 (torchvision v1.5), VGG-16
// and Inception-v3. Parameter names follow torchvision's state_dict so a profile can be compared
// with a real model's parameter list.
#include <array>
#include <string>
#include <utility>

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
  std::size_t kernel = 1;  // height (and width, unless kernel_w is set)
  std::size_t stride = 1;
  std::size_t pad = 0;  // of the height (and width, unless kernel_w is set)
  bool bias = false;
  // A rectangular kernel (Inception-v3's 1x7, 7x1, 1x3, 3x1): its width and the width's padding.
  std::size_t kernel_w = 0;
  std::size_t pad_w = 0;
};

// A kernel_h x kernel_w convolution at stride 1 that keeps the map's size (Inception-v3's
// factorised kernels: padding (k - 1) / 2 on each axis).
ConvSpec rect(std::size_t out_channels, std::size_t kernel_h, std::size_t kernel_w) {
  return {out_channels, kernel_h, 1, kernel_h / 2, false, kernel_w, kernel_w / 2};
}

std::size_t elements(const FeatureMap& m) { return m.channels * m.height * m.width; }

// Appends layers to an architecture while tracking the feature map shape.
class CnnBuilder {
 public:
  explicit CnnBuilder(ModelArch& arch) : arch_(arch) {}

  // Convolution: weight cout*cin*kh*kw (+ bias cout); FLOPs 2*kh*kw*cin*cout per output pixel.
  FeatureMap conv(const std::string& name, const FeatureMap& in, const ConvSpec& spec) {
    const std::size_t kernel_w = spec.kernel_w > 0 ? spec.kernel_w : spec.kernel;
    const std::size_t pad_w = spec.kernel_w > 0 ? spec.pad_w : spec.pad;
    FeatureMap out{spec.out_channels, window_out(in.height, spec.kernel, spec.stride, spec.pad),
                   window_out(in.width, kernel_w, spec.stride, pad_w)};
    const std::size_t weights = spec.out_channels * in.channels * spec.kernel * kernel_w;
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

  // A layer without parameters that writes a new feature map from `elems` elements read and
  // written per sample (Inception-v3's pooling branches and concatenations): memory-bound.
  void memory_pass(const std::string& name, std::size_t elems) {
    arch_.layers.push_back({name, {}, 0, LayerKind::memory_bound, static_cast<double>(elems)});
  }

  // A pooling layer as a pass of its own: reads the input map, writes the output map.
  FeatureMap pool_pass(const std::string& name, const FeatureMap& in, std::size_t kernel, std::size_t stride,
                       std::size_t pad) {
    const FeatureMap out = pool(in, kernel, stride, pad);
    memory_pass(name, elements(in) + elements(out));
    return out;
  }

  // A concatenation of branch outputs into one map: every element read once and written once.
  FeatureMap concat(const std::string& name, const FeatureMap& out) {
    memory_pass(name, 2 * elements(out));
    return out;
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

// Inception-v3's BasicConv2d: a convolution without bias, then a batch norm (torchvision).
FeatureMap basic_conv(CnnBuilder& b, const std::string& name, const FeatureMap& in, const ConvSpec& spec) {
  const FeatureMap out = b.conv(name + ".conv", in, spec);
  b.batch_norm(name + ".bn", out);
  return out;
}

// The branches of an Inception module run side by side on the module's input; their outputs are
// concatenated into the module's output (a copy: torch.cat, tf.concat). The pooling layers and
// the concatenations are passes of their own over feature maps, about 70 % of the norms' traffic
// here: they are counted as memory-bound layers. In ResNet and VGG such passes (one stem pool and
// the residual additions; five pools) are left to the fitted memory fraction, which absorbs
// element-wise work in proportion to the norms; Inception's would not be. Branch layers are
// appended in torchvision's order.

// InceptionA (35x35): 1x1 64; 1x1 48 -> 5x5 64; 1x1 64 -> 3x3 96 -> 3x3 96; 3x3 average pool
// -> 1x1 `pool`.
FeatureMap inception_a(CnnBuilder& b, const std::string& n, const FeatureMap& in, std::size_t pool) {
  basic_conv(b, n + ".branch1x1", in, {64});
  basic_conv(b, n + ".branch5x5_2", basic_conv(b, n + ".branch5x5_1", in, {48}), {64, 5, 1, 2});
  FeatureMap d = basic_conv(b, n + ".branch3x3dbl_1", in, {64});
  d = basic_conv(b, n + ".branch3x3dbl_2", d, {96, 3, 1, 1});
  basic_conv(b, n + ".branch3x3dbl_3", d, {96, 3, 1, 1});
  basic_conv(b, n + ".branch_pool", b.pool_pass(n + ".avg_pool", in, 3, 1, 1), {pool});
  return b.concat(n + ".cat", {64 + 64 + 96 + pool, in.height, in.width});
}

// InceptionB (35 -> 17): 3x3/2 384; 1x1 64 -> 3x3 96 -> 3x3/2 96; 3x3/2 max pool.
FeatureMap inception_b(CnnBuilder& b, const std::string& n, const FeatureMap& in) {
  const FeatureMap out = basic_conv(b, n + ".branch3x3", in, {384, 3, 2});
  FeatureMap d = basic_conv(b, n + ".branch3x3dbl_1", in, {64});
  d = basic_conv(b, n + ".branch3x3dbl_2", d, {96, 3, 1, 1});
  basic_conv(b, n + ".branch3x3dbl_3", d, {96, 3, 2});
  b.pool_pass(n + ".max_pool", in, 3, 2, 0);
  return b.concat(n + ".cat", {384 + 96 + in.channels, out.height, out.width});
}

// InceptionC (17x17, factorised 7x7 with `c7` channels inside): 1x1 192; 1x1 c7 -> 1x7 -> 7x1
// 192; 1x1 c7 -> 7x1 -> 1x7 -> 7x1 -> 1x7 192; 3x3 average pool -> 1x1 192.
FeatureMap inception_c(CnnBuilder& b, const std::string& n, const FeatureMap& in, std::size_t c7) {
  basic_conv(b, n + ".branch1x1", in, {192});
  FeatureMap s = basic_conv(b, n + ".branch7x7_1", in, {c7});
  s = basic_conv(b, n + ".branch7x7_2", s, rect(c7, 1, 7));
  basic_conv(b, n + ".branch7x7_3", s, rect(192, 7, 1));
  FeatureMap d = basic_conv(b, n + ".branch7x7dbl_1", in, {c7});
  d = basic_conv(b, n + ".branch7x7dbl_2", d, rect(c7, 7, 1));
  d = basic_conv(b, n + ".branch7x7dbl_3", d, rect(c7, 1, 7));
  d = basic_conv(b, n + ".branch7x7dbl_4", d, rect(c7, 7, 1));
  basic_conv(b, n + ".branch7x7dbl_5", d, rect(192, 1, 7));
  basic_conv(b, n + ".branch_pool", b.pool_pass(n + ".avg_pool", in, 3, 1, 1), {192});
  return b.concat(n + ".cat", {4 * 192, in.height, in.width});
}

// InceptionD (17 -> 8): 1x1 192 -> 3x3/2 320; 1x1 192 -> 1x7 -> 7x1 -> 3x3/2 192; 3x3/2 max pool.
FeatureMap inception_d(CnnBuilder& b, const std::string& n, const FeatureMap& in) {
  const FeatureMap out = basic_conv(b, n + ".branch3x3_2", basic_conv(b, n + ".branch3x3_1", in, {192}), {320, 3, 2});
  FeatureMap s = basic_conv(b, n + ".branch7x7x3_1", in, {192});
  s = basic_conv(b, n + ".branch7x7x3_2", s, rect(192, 1, 7));
  s = basic_conv(b, n + ".branch7x7x3_3", s, rect(192, 7, 1));
  basic_conv(b, n + ".branch7x7x3_4", s, {192, 3, 2});
  b.pool_pass(n + ".max_pool", in, 3, 2, 0);
  return b.concat(n + ".cat", {320 + 192 + in.channels, out.height, out.width});
}

// InceptionE (8x8): 1x1 320; 1x1 384 -> (1x3 384, 3x1 384); 1x1 448 -> 3x3 384 -> (1x3 384,
// 3x1 384); 3x3 average pool -> 1x1 192. The two split branches are concatenated first, then
// the module's four outputs.
FeatureMap inception_e(CnnBuilder& b, const std::string& n, const FeatureMap& in) {
  basic_conv(b, n + ".branch1x1", in, {320});
  const FeatureMap s = basic_conv(b, n + ".branch3x3_1", in, {384});
  basic_conv(b, n + ".branch3x3_2a", s, rect(384, 1, 3));
  basic_conv(b, n + ".branch3x3_2b", s, rect(384, 3, 1));
  b.concat(n + ".branch3x3.cat", {2 * 384, in.height, in.width});
  FeatureMap d = basic_conv(b, n + ".branch3x3dbl_1", in, {448});
  d = basic_conv(b, n + ".branch3x3dbl_2", d, {384, 3, 1, 1});
  basic_conv(b, n + ".branch3x3dbl_3a", d, rect(384, 1, 3));
  basic_conv(b, n + ".branch3x3dbl_3b", d, rect(384, 3, 1));
  b.concat(n + ".branch3x3dbl.cat", {2 * 384, in.height, in.width});
  basic_conv(b, n + ".branch_pool", b.pool_pass(n + ".avg_pool", in, 3, 1, 1), {192});
  return b.concat(n + ".cat", {320 + 2 * 384 + 2 * 384 + 192, in.height, in.width});
}

// A convolutional profile's architecture before its layers: 64 images per GPU by default, as
// the published benchmarks of these models run them.
ModelArch cnn_arch(std::string name, std::string description) {
  ModelArch arch;
  arch.name = std::move(name);
  arch.description = std::move(description);
  arch.default_batch = 64;
  return arch;
}

}  // namespace

ModelArch build_resnet(int depth) {
  const std::array<int, 4> blocks = resnet_blocks(depth);
  ModelArch arch = cnn_arch("resnet" + std::to_string(depth),
                            "ResNet-" + std::to_string(depth) + " (torchvision v1.5), 224x224 images");
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
  ModelArch arch = cnn_arch("vgg16", "VGG-16 (torchvision, no batch norm), 224x224 images");
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

ModelArch build_inception_v3() {
  ModelArch arch =
      cnn_arch("inception-v3", "Inception-v3 (torchvision, without the auxiliary classifier), 299x299 images");
  CnnBuilder b(arch);
  FeatureMap x = basic_conv(b, "Conv2d_1a_3x3", {3, 299, 299}, {32, 3, 2});  // 149x149
  x = basic_conv(b, "Conv2d_2a_3x3", x, {32, 3});                            // 147x147
  x = basic_conv(b, "Conv2d_2b_3x3", x, {64, 3, 1, 1});
  x = b.pool_pass("maxpool1", x, 3, 2, 0);  // 73x73
  x = basic_conv(b, "Conv2d_3b_1x1", x, {80});
  x = basic_conv(b, "Conv2d_4a_3x3", x, {192, 3});  // 71x71
  x = b.pool_pass("maxpool2", x, 3, 2, 0);          // 35x35
  x = inception_a(b, "Mixed_5b", x, 32);
  x = inception_a(b, "Mixed_5c", x, 64);
  x = inception_a(b, "Mixed_5d", x, 64);
  x = inception_b(b, "Mixed_6a", x);  // 17x17, 768 channels
  x = inception_c(b, "Mixed_6b", x, 128);
  x = inception_c(b, "Mixed_6c", x, 160);
  x = inception_c(b, "Mixed_6d", x, 160);
  x = inception_c(b, "Mixed_6e", x, 192);
  x = inception_d(b, "Mixed_7a", x);  // 8x8, 1280 channels
  x = inception_e(b, "Mixed_7b", x);
  x = inception_e(b, "Mixed_7c", x);  // 2048 channels
  b.linear("fc", x.channels, 1000);   // after global average pooling
  return arch;
}

}  // namespace colltune::sim::detail

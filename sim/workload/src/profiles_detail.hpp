#pragma once
// Builders of the built-in architectures (profiles_cnn.cpp, profiles_transformer.cpp).
#include "colltune/sim/profiles.hpp"

namespace colltune::sim::detail {

// torchvision ResNet-v1.5 (stride on the 3x3 conv) with `depth` 50, 101 or 152; 224x224 input.
ModelArch build_resnet(int depth);
// torchvision VGG-16 (no batch norm); 224x224 input.
ModelArch build_vgg16();
// torchvision Inception-v3 without its auxiliary classifier (aux_logits=False; the published
// single-GPU rows are tf_cnn_benchmarks' inception3, which has none); 299x299 input.
ModelArch build_inception_v3();

enum class BertHead { pretraining, squad };

struct BertConfig {
  std::string name;
  int hidden = 0;
  int layers = 0;
  int intermediate = 0;
  int vocab = 30522;
  int max_positions = 512;
  int type_vocab = 2;
};
// BERT with its pretraining heads (Hugging Face BertForPreTraining: encoder, pooler, masked-LM
// transform and decoder bias, next-sentence classifier; the decoder weight is tied to the
// word embeddings), or fine-tuned on SQuAD (BertForQuestionAnswering: the encoder without the
// pooler, and a span head of 2 outputs per token).
ModelArch build_bert(const BertConfig& config, int seq, BertHead head = BertHead::pretraining);

struct Gpt2Config {
  std::string name;
  int hidden = 0;
  int layers = 0;
  int vocab = 50257;
  int context = 1024;
};
// GPT-2 (Hugging Face GPT2LMHeadModel: the LM head is tied to the token embeddings).
ModelArch build_gpt2(const Gpt2Config& config, int seq);

}  // namespace colltune::sim::detail

// Transformer profiles derived layer by layer: BERT (pretraining heads included) and GPT-2.
// Parameter names follow Hugging Face transformers' state_dict.
#include <string>
#include <utility>
#include <vector>

#include "colltune/common/error.hpp"
#include "profiles_detail.hpp"

namespace colltune::sim::detail {
namespace {

std::size_t sz(int v) { return static_cast<std::size_t>(v); }

// A dense layer applied to `tokens` tokens of a sequence: weight in*out, bias out;
// FLOPs 2*in*out per token.
Layer linear(const std::string& name, int in, int out, int tokens) {
  return {name, {{name + ".weight", sz(in) * sz(out)}, {name + ".bias", sz(out)}},
          2.0 * static_cast<double>(in) * out * tokens, LayerKind::matmul, 0};
}

// Layer norm: per-feature scale and shift. Memory-bound: it reads and writes the activations
// of `tokens` tokens (2 x tokens x hidden elements per sample); no FLOPs counted.
Layer layer_norm(const std::string& name, int hidden, int tokens) {
  return {name, {{name + ".weight", sz(hidden)}, {name + ".bias", sz(hidden)}}, 0, LayerKind::memory_bound,
          2.0 * static_cast<double>(hidden) * tokens};
}

// An embedding lookup of `tables` tables: it gathers one row per token from each and writes
// them (2 x tables x tokens x hidden elements per sample). Memory-bound.
Layer embedding(const std::string& name, std::vector<ParamTensor> params, int hidden, int tokens) {
  const double elems = 2.0 * static_cast<double>(params.size()) * hidden * tokens;
  return {name, std::move(params), 0, LayerKind::memory_bound, elems};
}

// Attention score and weighted-sum products (Q K^T and A V) of one layer: 2 * seq^2 * hidden
// FLOPs each, summed over heads. No parameters: the projections are separate layers.
Layer attention_products(const std::string& name, int hidden, int seq) {
  return {name, {}, 4.0 * static_cast<double>(seq) * seq * hidden, LayerKind::matmul, 0};
}

// An empty sequence model of `layers` layers and width `hidden`; throws when `seq` does not fit
// its position table.
ModelArch sequence_model(const std::string& name, const std::string& family, int layers, int hidden,
                         const std::string& heads, int seq, int max_positions, int default_batch) {
  if (seq <= 0 || seq > max_positions) {
    throw Error(name + ": seq=" + std::to_string(seq) + " must be in 1.." + std::to_string(max_positions) +
                " (the model's position table)");
  }
  ModelArch arch;
  arch.name = name;
  arch.description = family + " " + std::to_string(layers) + " layers, hidden " + std::to_string(hidden) + heads +
                     "; seq " + std::to_string(seq);
  arch.default_batch = default_batch;
  arch.seq = seq;
  return arch;
}

void add_bert_layer(ModelArch& arch, const BertConfig& c, int index, int seq) {
  const std::string p = "bert.encoder.layer." + std::to_string(index);
  const int h = c.hidden;
  arch.layers.push_back(linear(p + ".attention.self.query", h, h, seq));
  arch.layers.push_back(linear(p + ".attention.self.key", h, h, seq));
  arch.layers.push_back(linear(p + ".attention.self.value", h, h, seq));
  arch.layers.push_back(attention_products(p + ".attention.self.scores", h, seq));
  arch.layers.push_back(linear(p + ".attention.output.dense", h, h, seq));
  arch.layers.push_back(layer_norm(p + ".attention.output.LayerNorm", h, seq));
  arch.layers.push_back(linear(p + ".intermediate.dense", h, c.intermediate, seq));
  arch.layers.push_back(linear(p + ".output.dense", c.intermediate, h, seq));
  arch.layers.push_back(layer_norm(p + ".output.LayerNorm", h, seq));
}

void add_gpt2_block(ModelArch& arch, const Gpt2Config& c, int index, int seq) {
  const std::string p = "transformer.h." + std::to_string(index);
  const int h = c.hidden;
  arch.layers.push_back(layer_norm(p + ".ln_1", h, seq));
  arch.layers.push_back(linear(p + ".attn.c_attn", h, 3 * h, seq));  // fused q, k, v
  arch.layers.push_back(attention_products(p + ".attn.scores", h, seq));
  arch.layers.push_back(linear(p + ".attn.c_proj", h, h, seq));
  arch.layers.push_back(layer_norm(p + ".ln_2", h, seq));
  arch.layers.push_back(linear(p + ".mlp.c_fc", h, 4 * h, seq));
  arch.layers.push_back(linear(p + ".mlp.c_proj", 4 * h, h, seq));
}

}  // namespace

ModelArch build_bert(const BertConfig& c, int seq, BertHead head) {
  const bool squad = head == BertHead::squad;
  ModelArch arch = sequence_model(c.name, "BERT", c.layers, c.hidden,
                                  squad ? ", SQuAD span head" : ", with pretraining heads", seq, c.max_positions, 32);
  const int h = c.hidden;
  // Embedding lookups cost no FLOPs (memory-bound); their gradients are ready last.
  arch.layers.push_back(embedding("bert.embeddings",
                                  {{"bert.embeddings.word_embeddings.weight", sz(c.vocab) * sz(h)},
                                   {"bert.embeddings.position_embeddings.weight", sz(c.max_positions) * sz(h)},
                                   {"bert.embeddings.token_type_embeddings.weight", sz(c.type_vocab) * sz(h)}},
                                  h, seq));
  arch.layers.push_back(layer_norm("bert.embeddings.LayerNorm", h, seq));
  for (int i = 0; i < c.layers; ++i) add_bert_layer(arch, c, i, seq);
  if (squad) {  // start and end logits for every token
    arch.layers.push_back(linear("qa_outputs", h, 2, seq));
    return arch;
  }
  arch.layers.push_back(linear("bert.pooler.dense", h, h, 1));  // the [CLS] token only
  arch.layers.push_back(linear("cls.predictions.transform.dense", h, h, seq));
  arch.layers.push_back(layer_norm("cls.predictions.transform.LayerNorm", h, seq));
  // Decoder: weight tied to the word embeddings, own bias; scores every position.
  arch.layers.push_back({"cls.predictions", {{"cls.predictions.bias", sz(c.vocab)}},
                         2.0 * static_cast<double>(h) * c.vocab * seq, LayerKind::matmul, 0});
  arch.layers.push_back(linear("cls.seq_relationship", h, 2, 1));
  return arch;
}

ModelArch build_gpt2(const Gpt2Config& c, int seq) {
  ModelArch arch = sequence_model(c.name, "GPT-2", c.layers, c.hidden, "", seq, c.context, 8);
  const int h = c.hidden;
  arch.layers.push_back(embedding("transformer.wte", {{"transformer.wte.weight", sz(c.vocab) * sz(h)}}, h, seq));
  arch.layers.push_back(embedding("transformer.wpe", {{"transformer.wpe.weight", sz(c.context) * sz(h)}}, h, seq));
  for (int i = 0; i < c.layers; ++i) add_gpt2_block(arch, c, i, seq);
  arch.layers.push_back(layer_norm("transformer.ln_f", h, seq));
  // LM head: weight tied to wte (its gradient joins wte's), projects every position.
  arch.layers.push_back({"lm_head", {}, 2.0 * static_cast<double>(h) * c.vocab * seq, LayerKind::matmul, 0});
  return arch;
}

}  // namespace colltune::sim::detail

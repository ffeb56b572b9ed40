#pragma once
// Long chunk pipelines priced from short ones (cost_model.hpp's price_pipeline).
//
// A pipeline of R whole rounds (Algorithm::pipeline_pieces pieces of chunk_elems elements each)
// followed by a request's last chunks (count % unit elements) costs t(R). Once the pipeline has
// filled, every further round adds the same steady round s: t(R) = t(R0 + 1) + (R - R0 - 1) s
// for every R past the round R0 where it has settled.
//
// R0 is found once per pipeline (algorithm, options, machine, layout and element size: the
// caller's key), on its pipelines of whole rounds, by doubling from 4 rounds (or from the window
// below rounded up to a power of two, for callers whose sizes double: FirstProbe). A probe at R0 has
// settled when the w rounds after it cost w times the round after it, s = t(R0 + 1) - t(R0), to
// 1e-10: three runs of the pricer (R0, R0 + 1 and R0 + w rounds). The window w is R0, and at
// least the caller's window, twice the depth of the pipeline's reduction
// (Algorithm::summation_depth: lg p for dbtree; the chain and the tree for nccl_tree; the tree
// across hosts and the switch for NVLS-Tree): a tree fills and drains in about that many rounds,
// and before it a round's cost can hold still and move again. A chunked dbtree on
// flat:ranks=512 costs the same round from round 4 to round 10 and settles at round 19, and
// NVLS-Tree on 16 H100 hosts has two equal rounds at 4 and 5, then two dearer, before it
// settles at 8: two adjacent rounds alone, or a window as short as the probe, would extend a
// transient (8% off at 40 rounds on the first). The search goes only as far as a request's
// rounds make it pay (R0 + w + 1 < R) and the next longer request continues it; its answer is
// the first settled probe of the doubling sequence, whichever request found it, so a price does
// not depend on what was priced before it nor on other threads.
//
// A request with other last chunks then costs two runs, t(R0) and t(R0 + 1) with its last
// chunks, whose difference must be s (to 1e-10). A request reuses the probe only where its own
// search would have reached it (R0 + w + 1 < R), so that its price does not depend on whether
// another request found the probe first. Where its round is not s, the request's own pipeline
// is searched the same way from 2 R0; where nothing settles early enough the caller prices it
// whole. Extending by s errs by the remaining rounds times the settling left, a fraction 1e-10
// of s: tests hold every price to the whole schedule's within 1e-9.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>

namespace colltune::sim::detail {

// The price of `rounds` whole rounds, followed by the request's last chunks or not.
using RoundsPrice = std::function<double(std::size_t rounds, bool last_chunks)>;

// The window a probe is proven over, at least (asked only where a probe may pay).
using Window = std::function<std::size_t()>;

// Where a pipeline's doubling search begins (cost_model.hpp's PipelineProbes): at 4 rounds, or
// at the window rounded up to a power of two. The search's answer is the first settled probe of
// its own sequence, so the key must tell the two apart (the caller's key does).
enum class FirstProbe { four_rounds, window };

// The price of the request's `rounds` rounds and its last chunks, from short pipelines that have
// settled; nullopt where none settles early enough to be cheaper than the whole.
std::optional<double> price_from_steady_rounds(const std::string& pipeline_key, std::size_t rounds,
                                               const Window& window, const RoundsPrice& price,
                                               FirstProbe first = FirstProbe::four_rounds);

// Forgets every settled pipeline: each is searched anew, as in a fresh process.
void forget_settled_pipelines();

}  // namespace colltune::sim::detail

// One process doing to a layer what P workers' syncs do in one iteration, with the same kernels
// in the same order, for the equivalence tests: the PS sums the workers' full gradients in rank
// order (the summation server's chunk update), the ring sums segment c as g_c + g_(c+1) + ...
// round the ring (ring/ring_allreduce.h), SFB reconstructs sum_p U_p V_p^T in the SF kernel's
// order and the bias from U's row sums (kernels/sf_bias.h), the Adam servers form the same sum
// as SFB; each then applies the workers' optimizer step with grad_scale 1/P.
#pragma once

#include <memory>
#include <vector>

#include "kernels/optimizer_config.h"
#include "model/model.h"
#include "scheme/scheme.h"
#include "trainer/sync/replica.h"

namespace poseidon::testing {

class ReferenceCombiner {
 public:
  ReferenceCombiner(const model::Model& model, const kernels::OptimizerConfig& optimizer, int workers);

  // Worker p's inputs of the iteration: u(l) / v(l) (M x K, N x K) or gradient(l).
  trainer::Replica& worker(int p) { return *workers_[static_cast<size_t>(p)]; }
  // The combined replica: its params(l) are what every worker must hold.
  trainer::Replica& result() { return *result_; }

  // Applies iteration `iteration`'s update of `layer` as `scheme` would.
  Status step(size_t layer, scheme::Scheme scheme, uint64_t iteration);

 private:
  Status sumLikePs();  // full_ -> summed_
  Status sumLikeRing();

  int workers_count_;
  std::vector<std::unique_ptr<trainer::Replica>> workers_;
  std::unique_ptr<trainer::Replica> result_;
  std::vector<std::vector<float>> full_;  // per worker: the layer's full gradient
  std::vector<float> summed_;
};

}  // namespace poseidon::testing

#include "trainer/wfbp/copy_engine.h"

#include "trainer/wfbp/thread_copy_engine.h"
#ifdef POSEIDON_TRAINER_CUDA
#include "trainer/wfbp/cuda/cuda_copy_engine.h"
#endif

namespace poseidon::trainer {

std::shared_ptr<CopyEngine> builtinCopyEngine() {
#ifdef POSEIDON_TRAINER_CUDA
  if (auto engine = cuda::makeCudaCopyEngine()) return engine;
#endif
  return std::make_shared<ThreadCopyEngine>();
}

}  // namespace poseidon::trainer

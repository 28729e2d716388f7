#include "kernels/nvtx_range.h"

#if defined(POSEIDON_HAVE_NVTX)
#include <nvtx3/nvToolsExt.h>
#endif

namespace poseidon::kernels {

#if defined(POSEIDON_HAVE_NVTX)

namespace {
nvtxDomainHandle_t domain() {
  static const nvtxDomainHandle_t handle = nvtxDomainCreateA("poseidon");
  return handle;
}
}  // namespace

NvtxRange::NvtxRange(const char* name) {
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = name;
  nvtxDomainRangePushEx(domain(), &attributes);
}

NvtxRange::~NvtxRange() { nvtxDomainRangePop(domain()); }

#else

NvtxRange::NvtxRange(const char*) {}
NvtxRange::~NvtxRange() {}

#endif

}  // namespace poseidon::kernels

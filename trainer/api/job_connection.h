// JobConnection: one rank's way into a training job — the rendezvous store (worker 0 serves it),
// the transport device, and the contexts of the schemes it takes part in, each named for the job
// and the scheme so that the PS context's ranks are the workers then the PS servers, SFB's and
// the ring's the workers, Adam's the workers then the Adam servers.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "common/deadline.h"
#include "common/status.h"
#include "scheme/scheme.h"
#include "trainer/api/job_layout.h"
#include "transport/bootstrap/launch_env.h"
#include "transport/bootstrap/store.h"
#include "transport/bootstrap/store_view.h"
#include "transport/context.h"
#include "transport/device.h"

namespace poseidon::trainer {

class JobConnection {
 public:
  // Checks that the launch's size is the layout's, opens the store and creates the device.
  static Result<std::unique_ptr<JobConnection>> open(const std::string& job, const JobLayout& layout,
                                                     const transport::bootstrap::LaunchInfo& launch,
                                                     const transport::DeviceOptions& device, Deadline deadline);

  int rank() const { return launch_.rank; }
  const JobLayout& layout() const { return layout_; }
  std::string describe() const { return layout_.describe(launch_.rank); }
  transport::bootstrap::Store& store() { return *store_; }
  // The job's own key space: "<job>/<key>".
  transport::bootstrap::StoreView& view() { return *view_; }

  // Creates and connects this rank's context of `scheme` (collective with the scheme's other
  // ranks). The connection keeps it.
  Result<transport::Context*> join(scheme::Scheme scheme, Deadline deadline);
  // A context of the workers alone (ranks as the job's), for `purpose` (the merge plan's link
  // probe): collective among the workers.
  Result<transport::Context*> joinWorkers(std::string_view purpose, Deadline deadline);

  // The last call of a rank: a barrier of every rank, after which worker 0 waits until each has
  // seen it, so the store it serves outlives everyone's last request. A server arrives for the
  // workers it went on without, `lost_ranks` (job_exit.h).
  Status leave(Deadline deadline, std::span<const int> lost_ranks = {});

 private:
  JobConnection() = default;
  Result<transport::Context*> connectContext(std::string_view name_in_job, int context_rank, int size,
                                             Deadline deadline);

  std::string job_;
  JobLayout layout_;
  transport::bootstrap::LaunchInfo launch_;
  // The store first, so it goes last: worker 0's serves everyone until the contexts are gone.
  std::unique_ptr<transport::bootstrap::Store> store_;
  std::unique_ptr<transport::bootstrap::StoreView> view_;
  std::shared_ptr<transport::Device> device_;
  std::vector<std::shared_ptr<transport::Context>> contexts_;
};

}  // namespace poseidon::trainer

// Links against the installed library and runs a two-rank exchange in one process, using only
// the installed public headers (a private one would not be found).
#include <cstdio>
#include <cstring>
#include <thread>

#include "transport/bootstrap/open_store.h"
#include "transport/device.h"

using namespace poseidon;
using namespace poseidon::transport;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer STORE_DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  std::shared_ptr<Context> contexts[2];
  std::shared_ptr<Device> devices[2];
  Status statuses[2];
  std::thread ranks[2];
  for (int r = 0; r < 2; ++r) {
    ranks[r] = std::thread([&, r] {
      DeviceOptions options;
      options.secret = "consumer";
      auto device = createDevice(options);
      if (!device) {
        statuses[r] = device.status();
        return;
      }
      devices[r] = *device;
      auto context = (*device)->createContext(r, 2, "consumer");
      bootstrap::LaunchInfo launch;
      launch.rank = r;
      launch.size = 2;
      launch.file_store_dir = dir;
      auto store = bootstrap::openStore(launch, Deadline::after(std::chrono::seconds(20)), options.secret);
      if (!context || !store) {
        statuses[r] = !context ? context.status() : store.status();
        return;
      }
      contexts[r] = *context;
      statuses[r] = (*context)->connect(**store, Deadline::after(std::chrono::seconds(20)));
    });
  }
  for (auto& t : ranks) t.join();
  for (auto& st : statuses) {
    if (!st.isOk()) {
      std::fprintf(stderr, "%s\n", st.toString().c_str());
      return 1;
    }
  }
  char out[] = "hello from an installed Poseidon";
  char in[sizeof(out)] = {};
  auto out_region = contexts[0]->registerMemory(out, sizeof(out));
  auto in_region = contexts[1]->registerMemory(in, sizeof(in));
  auto r = contexts[1]->pair(0).recv(0, **in_region, 0, sizeof(in));
  auto s = contexts[0]->pair(1).send(0, **out_region, 0, sizeof(out));
  if (!r->wait(Deadline::after(std::chrono::seconds(10))).isOk() || std::strcmp(in, out) != 0) {
    std::fprintf(stderr, "exchange failed: %s\n", r->status().toString().c_str());
    return 1;
  }
  // `out` must outlive its send.
  if (!s->wait(Deadline::after(std::chrono::seconds(10))).isOk()) {
    std::fprintf(stderr, "send failed: %s\n", s->status().toString().c_str());
    return 1;
  }
  std::printf("%s\n", in);
  return 0;
}

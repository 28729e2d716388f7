#include "tests/trainer/traffic_sim.h"

#include <algorithm>
#include <random>
#include <utility>

namespace poseidon::trainer::sim {

namespace {

// U V^T for one worker's factors (or a copy received from it), added into `gradient`.
void addProduct(const Factors& f, const std::vector<double>& u, const std::vector<double>& v,
                std::vector<double>& gradient) {
  for (int64_t i = 0; i < f.m; ++i) {
    for (int64_t j = 0; j < f.n; ++j) {
      double sum = 0;
      for (int64_t s = 0; s < f.k; ++s) sum += u[i * f.k + s] * v[j * f.k + s];
      gradient[i * f.n + j] += sum;
    }
  }
}

std::vector<double> ownGradient(const Factors& f, int worker) {
  std::vector<double> gradient(f.m * f.n, 0.0);
  addProduct(f, f.u[worker], f.v[worker], gradient);
  return gradient;
}

// U_p then V_p: the one message that carries a worker's factors.
std::vector<double> factorMessage(const Factors& f, int worker) {
  std::vector<double> message = f.u[worker];
  message.insert(message.end(), f.v[worker].begin(), f.v[worker].end());
  return message;
}

std::vector<double> slice(const std::vector<double>& data, int64_t begin, int64_t end) {
  return {data.begin() + begin, data.begin() + end};
}

void addFactorMessage(const Factors& f, const std::vector<double>& message, std::vector<double>& gradient) {
  addProduct(f, slice(message, 0, f.m * f.k), slice(message, f.m * f.k, (f.m + f.n) * f.k), gradient);
}

// Where part `part` of `parts` begins in `total` floats: parts differ by at most one float.
int64_t partBegin(int64_t total, int64_t parts, int64_t part) { return total * part / parts; }

}  // namespace

std::vector<double> Network::send(int from, int to, std::vector<double> payload) {
  if (from == to) return payload;
  counts_.at(from).sent_floats += static_cast<double>(payload.size());
  counts_.at(from).sent_messages += 1;
  counts_.at(to).received_floats += static_cast<double>(payload.size());
  counts_.at(to).received_messages += 1;
  return payload;
}

double Network::busiestFloats() const {
  double most = 0;
  for (const NodeTraffic& count : counts_) most = std::max(most, count.floats());
  return most;
}

Factors randomFactors(int workers, int64_t m, int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> value(-3, 3);
  Factors f{m, n, k, {}, {}};
  for (int p = 0; p < workers; ++p) {
    std::vector<double> u(m * k), v(n * k);
    for (double& x : u) x = value(rng);
    for (double& x : v) x = value(rng);
    f.u.push_back(std::move(u));
    f.v.push_back(std::move(v));
  }
  return f;
}

std::vector<double> summedGradient(const Factors& f) {
  std::vector<double> sum(f.m * f.n, 0.0);
  for (int p = 0; p < f.workers(); ++p) addProduct(f, f.u[p], f.v[p], sum);
  return sum;
}

Outcome simulatePs(const Factors& f, int servers, bool dedicated_servers) {
  const int workers = f.workers();
  const int first_server = dedicated_servers ? workers : 0;
  const int64_t total = f.m * f.n;
  Outcome out{{}, Network(dedicated_servers ? workers + servers : std::max(workers, servers))};
  std::vector<std::vector<double>> shard_sums(servers);
  for (int s = 0; s < servers; ++s) {
    shard_sums[s].assign(partBegin(total, servers, s + 1) - partBegin(total, servers, s), 0);
  }
  // Push: shard s of every worker's gradient goes to server s, which sums the P1 of them.
  for (int p = 0; p < workers; ++p) {
    const std::vector<double> gradient = ownGradient(f, p);
    for (int s = 0; s < servers; ++s) {
      const auto shard = slice(gradient, partBegin(total, servers, s), partBegin(total, servers, s + 1));
      const auto received = out.network.send(p, first_server + s, shard);
      for (size_t i = 0; i < received.size(); ++i) shard_sums[s][i] += received[i];
    }
  }
  // Pull: every server sends its summed shard back to every worker.
  for (int p = 0; p < workers; ++p) {
    std::vector<double> gradient;
    for (int s = 0; s < servers; ++s) {
      const auto received = out.network.send(first_server + s, p, shard_sums[s]);
      gradient.insert(gradient.end(), received.begin(), received.end());
    }
    out.gradient.push_back(std::move(gradient));
  }
  return out;
}

Outcome simulateSfb(const Factors& f) {
  const int workers = f.workers();
  Outcome out{{}, Network(workers)};
  out.gradient.assign(workers, std::vector<double>(f.m * f.n, 0.0));
  for (int p = 0; p < workers; ++p) {
    const std::vector<double> message = factorMessage(f, p);
    for (int q = 0; q < workers; ++q) addFactorMessage(f, out.network.send(p, q, message), out.gradient[q]);
  }
  return out;
}

Outcome simulateAdam(const Factors& f) {
  const int workers = f.workers();
  const int server = workers;
  Outcome out{{}, Network(workers + 1)};
  std::vector<double> sum(f.m * f.n, 0.0);
  for (int p = 0; p < workers; ++p) addFactorMessage(f, out.network.send(p, server, factorMessage(f, p)), sum);
  for (int p = 0; p < workers; ++p) out.gradient.push_back(out.network.send(server, p, sum));
  return out;
}

Outcome simulateRing(const Factors& f) {
  const int workers = f.workers();
  const int64_t total = f.m * f.n;
  Outcome out{{}, Network(workers)};
  for (int p = 0; p < workers; ++p) out.gradient.push_back(ownGradient(f, p));
  auto segment = [&](int s) {
    const int wrapped = ((s % workers) + workers) % workers;
    return std::pair{partBegin(total, workers, wrapped), partBegin(total, workers, wrapped + 1)};
  };
  // At step t node i sends segment i - t (reduce-scatter, receiver adds) or i + 1 - t (all-gather,
  // receiver overwrites) to node i + 1. All sends of a step leave before anyone updates, as on a ring.
  for (bool gather : {false, true}) {
    for (int step = 0; step + 1 < workers; ++step) {
      std::vector<std::pair<int64_t, std::vector<double>>> arrived(workers);  // at node i + 1: (begin, data)
      for (int i = 0; i < workers; ++i) {
        const int next = (i + 1) % workers;
        const auto [begin, end] = segment(gather ? i + 1 - step : i - step);
        arrived[next] = {begin, out.network.send(i, next, slice(out.gradient[i], begin, end))};
      }
      for (int j = 0; j < workers; ++j) {
        const auto& [begin, data] = arrived[j];
        for (size_t x = 0; x < data.size(); ++x) {
          double& target = out.gradient[j][begin + x];
          target = gather ? data[x] : target + data[x];
        }
      }
    }
  }
  return out;
}

}  // namespace poseidon::trainer::sim

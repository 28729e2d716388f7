// EXPECTs that a CPU twin refuses its arguments with std::invalid_argument whose message contains
// `needle` (the field and value it names): expectRejected(chunkUpdateCpu, update, "params is null").
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <string>

namespace poseidon::kernels {

template <typename Kernel, typename Arguments>
void expectRejected(Kernel&& kernel, const Arguments& arguments, const std::string& needle) {
  try {
    kernel(arguments);
    ADD_FAILURE() << "accepted arguments that should fail with '" << needle << "'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// One bad variant of good arguments: what to change, and what the rejection must say.
template <typename Arguments>
struct BadArguments {
  std::function<void(Arguments&)> change;
  const char* needle;
};

template <typename Kernel, typename Arguments>
void expectEachRejected(Kernel kernel, const Arguments& good, std::initializer_list<BadArguments<Arguments>> cases) {
  for (const BadArguments<Arguments>& bad : cases) {
    Arguments arguments = good;
    bad.change(arguments);
    expectRejected(kernel, arguments, bad.needle);
  }
}

}  // namespace poseidon::kernels

// CLI11's App by name only, for headers that take one by reference or pointer.
//
// CLI11 is header-only, and including it costs a translation unit about 6 s of GCC at -O2 (its
// namespace-scope validators are defined in every unit that includes it), so a header of
// options declares App this way and only the sources that build or parse a command line
// include <CLI/CLI.hpp>. CLI11's own headers forward-declare App the same way.
#pragma once

namespace CLI {
class App;
}  // namespace CLI

// recur::expected / recur::unexpected: std::expected where the standard library has it, and a
// small compatible replacement where it does not.
//
// Why: the fuzz build uses clang-14 (the libFuzzer Debian ships), and clang-14 cannot compile
// libstdc++ 12's <expected> (it needs conditionally trivial destructors). Everything in recur
// therefore spells these recur::expected and recur::unexpected. Only the subset recur uses is
// provided; g++ builds (every test and release binary) get the real std::expected.
#pragma once

#include <utility>
#include <version>

#if defined(__cpp_lib_expected) && !defined(RECUR_FORCE_EXPECTED_SHIM)
#include <expected>
namespace recur {
using std::expected;
using std::unexpected;
}  // namespace recur
#else
#include "core/expected_shim.h"
namespace recur {
using recur::shim::expected;
using recur::shim::unexpected;
}  // namespace recur
#endif

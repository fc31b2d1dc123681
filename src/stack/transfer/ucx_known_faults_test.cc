#include "transfer/ucx_known_faults.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace recur::transfer {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

constexpr UcxVersion kDebian12{1, 13, 1};
constexpr UcxVersion kFixed{1, 14, 0};

TEST(UcxKnownFaults, PrintedSettingIsFoundByItsWholeName) {
  const std::string printed = "# UCX config\nUCX_PROTO_ENABLE_X=y\nUCX_PROTO_ENABLE=n\nUCX_TLS=tcp\n";
  EXPECT_EQ(ucx_printed_setting(printed, "PROTO_ENABLE"), "n");
  EXPECT_EQ(ucx_printed_setting(printed, "TLS"), "tcp");
  EXPECT_EQ(ucx_printed_setting("UCX_TLS=sm", "TLS"), "sm");  // the last line needs no newline
  EXPECT_FALSE(ucx_printed_setting(printed, "PROTO"));
}

// UCX 1.13's new protocol layer smashes the stack on recur's eager blocks: refused there, with the fix named.
TEST(UcxKnownFaults, NewProtocolLayerIsRefusedBeforeUcx114) {
  for (const char* on : {"y", "yes", "ON", "1"}) {
    auto why = ucx_proto_refusal(kDebian12, on);
    ASSERT_TRUE(why) << on;
    EXPECT_TRUE(contains(*why, fmt::format("UCX_PROTO_ENABLE={} is not supported with UCX 1.13.1", on))) << *why;
    EXPECT_TRUE(contains(*why, "UCX 1.14")) << *why;
  }
  for (const char* off : {"n", "no", "off", "0", ""}) EXPECT_FALSE(ucx_proto_refusal(kDebian12, off)) << off;
  EXPECT_FALSE(ucx_proto_refusal(kFixed, "y"));
  EXPECT_FALSE(ucx_proto_refusal({2, 0, 0}, "y"));
  EXPECT_TRUE(ucx_proto_refusal({0, 9, 0}, "y"));
}

TEST(UcxKnownFaults, TcpWireupWarningWhereUcx113MayUseTcp) {
  EXPECT_TRUE(ucx_tcp_wireup_warning(kDebian12, nullptr));
  EXPECT_TRUE(ucx_tcp_wireup_warning(kDebian12, "tcp"));
  EXPECT_TRUE(ucx_tcp_wireup_warning(kDebian12, "rc,sm,tcp"));
  EXPECT_FALSE(ucx_tcp_wireup_warning(kDebian12, "sm,cma"));
  EXPECT_FALSE(ucx_tcp_wireup_warning(kDebian12, "^tcp"));
  EXPECT_FALSE(ucx_tcp_wireup_warning(kFixed, "tcp"));
}

}  // namespace
}  // namespace recur::transfer

#include "transfer/ucx_defaults.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace recur::transfer {
namespace {

std::vector<std::string> names_for(const std::map<std::string, std::string>& env) {
  std::vector<std::string> names;
  for (const UcxSetting& s : ucx_tcp_defaults([&](const char* key) -> const char* {
         auto it = env.find(key);
         return it == env.end() ? nullptr : it->second.c_str();
       }))
    names.push_back(s.name);
  return names;
}

const std::vector<std::string> kAll = {"TX_SEG_SIZE", "RX_SEG_SIZE", "SNDBUF", "RCVBUF", "MAX_RNDV_RAILS"};

TEST(UcxDefaults, TcpSettingsWhereUcxMayUseTcp) {
  EXPECT_EQ(names_for({}), kAll);
  EXPECT_EQ(names_for({{"UCX_TLS", "tcp"}}), kAll);
  EXPECT_EQ(names_for({{"UCX_TLS", "sm,tcp"}}), kAll);
  EXPECT_EQ(names_for({{"UCX_TLS", "all"}}), kAll);
  EXPECT_EQ(names_for({{"UCX_TLS", "^cma"}}), kAll);
}

TEST(UcxDefaults, NoneWhereUcxTlsRulesTcpOut) {
  EXPECT_TRUE(names_for({{"UCX_TLS", "sm"}}).empty());
  EXPECT_TRUE(names_for({{"UCX_TLS", "rc,sm"}}).empty());
  EXPECT_TRUE(names_for({{"UCX_TLS", "^tcp"}}).empty());
}

TEST(UcxDefaults, TheUsersSettingWins) {
  EXPECT_EQ(names_for({{"UCX_TCP_SNDBUF", "1m"}, {"UCX_TCP_TX_SEG_SIZE", "8k"}, {"UCX_MAX_RNDV_RAILS", "2"}}),
            (std::vector<std::string>{"RX_SEG_SIZE", "RCVBUF"}));
}

}  // namespace
}  // namespace recur::transfer

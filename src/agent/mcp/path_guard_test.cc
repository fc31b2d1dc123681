#include "mcp/path_guard.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace recur::mcp {
namespace {

namespace fs = std::filesystem;

class PathGuard : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mcp_path_guard_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    top_ = fs::canonical(tmpl);
    root_ = top_ / "root";
    fs::create_directories(root_ / "sub");
    std::ofstream(root_ / "sub" / "a.json") << "{}";
    std::ofstream(top_ / "secret") << "x";
    fs::create_symlink(top_ / "secret", root_ / "out_link");
    fs::create_symlink(root_ / "sub", root_ / "in_link");
  }
  void TearDown() override { fs::remove_all(top_); }
  Result<std::string> confine(const std::string& p) { return confine_path(root_.string(), p, "arguments.trace"); }
  fs::path top_, root_;
};

TEST_F(PathGuard, AcceptsPathsInside) {
  EXPECT_EQ(*confine("sub/a.json"), (root_ / "sub/a.json").string());
  EXPECT_EQ(*confine((root_ / "sub/a.json").string()), (root_ / "sub/a.json").string());
  EXPECT_EQ(*confine("sub/../sub/a.json"), (root_ / "sub/a.json").string());
  EXPECT_EQ(*confine("in_link/a.json"), (root_ / "sub/a.json").string());
  EXPECT_EQ(*confine("runs/new.db"), (root_ / "runs/new.db").string());  // not there yet: fine
}

TEST_F(PathGuard, RejectsEscapes) {
  for (const std::string p : {"../secret", "sub/../../secret", "/etc/passwd", "out_link", "/tmp"}) {
    auto r = confine(p);
    ASSERT_FALSE(r) << p;
    EXPECT_NE(r.error().message().find("arguments.trace"), std::string::npos);
    EXPECT_NE(r.error().message().find("outside"), std::string::npos) << r.error().message();
  }
  // A sibling whose name starts with the root's name is outside too.
  fs::create_directories(top_ / "root2");
  EXPECT_FALSE(confine((top_ / "root2").string()));
  EXPECT_FALSE(confine(""));
}

}  // namespace
}  // namespace recur::mcp

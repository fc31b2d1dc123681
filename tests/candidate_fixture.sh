# Shared by candidate_cli_test.sh and proposer_patch_cli_test.sh, after testlib.sh: creates the
# fixture repository (tests/candidate_fixture, committed) in $R = $T/repo and $P, its patches.
chmod 755 "$T"  # as root, runners run as nobody and must reach their binary
R="$T/repo"
P="$SRC/tests/candidate_fixture/patches"
mkdir -p "$R"
cp "$SRC"/tests/candidate_fixture/runner.cc "$SRC"/tests/candidate_fixture/variants.h "$SRC"/tests/candidate_fixture/Makefile "$R"/
git -C "$R" init -q && git -C "$R" add . && \
  git -C "$R" -c user.name=t -c user.email=t@t commit -qm fixture || fail "fixture repo"

// A proposer's state for tests, over knobs the tests register (proposer_test_fixture.cc):
// test.proposer.color (enum red/green/blue, now red; blue already tried), test.proposer.pinned
// (fixed by the episode), both tagged test:paint, which the evidence points at, and
// test.proposer.other (tagged elsewhere).
#pragma once

#include "loop/proposer.h"

namespace recur::agent {

struct ProposerFixture {
  Episode episode;
  AgentState state;
  ProposerFixture();
};

}  // namespace recur::agent

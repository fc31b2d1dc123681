#include "loop/proposer_test_fixture.h"

namespace recur::agent {

RECUR_KNOB(proposer_test_color,
           {.name = "test.proposer.color", .type = KnobType::kEnum, .choices = {"red", "green", "blue"},
            .default_value = "red", .components = {"test:paint"}, .help = "a knob the evidence points at"});
RECUR_KNOB(proposer_test_pinned, {.name = "test.proposer.pinned", .type = KnobType::kBool, .default_value = "false",
                                  .components = {"test:paint"}, .help = "fixed by the episode"});
RECUR_KNOB(proposer_test_other, {.name = "test.proposer.other", .type = KnobType::kInt, .default_value = "4",
                                 .components = {"test:elsewhere"}, .help = "no evidence points here"});

ProposerFixture::ProposerFixture() {
  episode.name = "paint";
  episode.description = std::string(1000, 'd');
  episode.fixed = {"test.proposer.pinned"};
  state.episode = &episode;
  state.config = {{"test.proposer.color", "red"}};
  state.evidence.components = {{.component = "test:paint/brush", .share = 0.9, .evidence = "most of it"}};
  state.tried = {"test.proposer.color=blue"};
}

}  // namespace recur::agent

# End-to-end tests of `recur agent run/resume`: kill -9 mid-episode and resume (journal
# invariants), exit codes, usage errors.
recur_e2e_test(agent_cli_test TIMEOUT 300)
# A fixed subset of the suite scored through `recur agent eval` with the built-in proposer. Alone
# (RUN_SERIAL): its speed gates time kernels and the engine, and two other tests on two cores
# pushed a 0.81 ratio to 0.93 and a 2.9 ratio to 1.75 (both failing their bounds).
recur_e2e_test(episodes_test TIMEOUT 600 RUN_SERIAL)
# An external command proposer that follows `next` solves kda-replayssm; refusals are fed back.
recur_e2e_test(proposer_cli_test TIMEOUT 300)
# `recur agent eval`: a small suite scored for the built-in and random proposers, --verify, errors.
recur_e2e_test(agent_eval_cli_test TIMEOUT 300)
# The shipped suite holds: every episode's start fails its gate and its expected root cause passes.
recur_e2e_test(episodes_expect_test TIMEOUT 900 RUN_SERIAL)

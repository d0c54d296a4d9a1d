#!/usr/bin/env bash
# A plan that waits for approval across a restart: the resumed run waits for
# a person, not the provider, so it logs no "waiting for the provider" every
# 10 s, and its tokens (and so its cost) do not read zero; the plan is then
# approved and the run completes.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start_with_run planning plan "Plan, then write" attention.kind plan-approval --plan-first

tokens=$(run_field "$run" usage.inputTokens)
((tokens > 0)) || fail "the plan's run counted no tokens before the restart ($tokens)"
svc_kill9
svc_restart
# The events of the run since its resume (the new stream's).
resumed_events() {
	svc_get "/api/v1/runs/$run/events?limit=1000" | tr '\n' ' ' |
		sed 's/.*"phase":"resumed"//'
}
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	svc_get "/api/v1/runs/$run/events?limit=1000" | grep -q '"phase":"resumed"' && break
	tick
done
svc_get "/api/v1/runs/$run/events?limit=1000" | grep -q '"phase":"resumed"' || fail "the run did not resume"
wait_run_field "$run" attention.kind plan-approval
# Past one liveness interval (10 s) after the resume.
for ((i = 0; i < 120; i++)); do tick; done
if resumed_events | grep -q "waiting for the provider"; then
	fail "the resumed run waiting for its plan said 'waiting for the provider'"
fi
pass "a plan waiting across a restart logs no 'waiting for the provider'"
after=$(run_field "$run" usage.inputTokens)
((after >= tokens)) || fail "the resumed run's tokens read $after, not the $tokens it had"
pass "the resumed run keeps its token counts ($after input tokens)"
td plan approve "$(run_field "$run" sessionId)" >/dev/null
wait_run_field "$run" status completed
pass "the plan approved after the restart, the run completes"

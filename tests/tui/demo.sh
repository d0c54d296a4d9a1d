#!/usr/bin/env bash
# taskdeck demo: the demo project and its four runs, once (--again for more),
# and the dashboard opened on them as ./quickstart does.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start

out=$(td demo)
printf '%s\n' "$out"
project=$(awk '$1 == "project" && $3 == "demo" { print $2 }' <<<"$out")
[[ -n $project ]] || fail "taskdeck demo printed no project line"
declare -A run
for model in demo-stream plan research fail; do
	run[$model]=$(awk -v m="$model" '$1 == "run" && $3 == m { print $2 }' <<<"$out")
	[[ ${run[$model]} == run_* ]] || fail "taskdeck demo printed no $model run"
	[[ $(run_field "${run[$model]}" config.model) == "$model" ]] || fail "run ${run[$model]} is not $model"
	[[ $(run_field "${run[$model]}" config.provider) == replay ]] || fail "run ${run[$model]} does not use replay"
done
[[ $(td defaults get "$project" | sed -n 's/^provider: //p') == replay ]] ||
	fail "the demo project's session defaults do not use the replay provider"
sessions=$(for m in "${!run[@]}"; do run_field "${run[$m]}" sessionId; done | sort -u | wc -l)
((sessions == 4)) || fail "the four runs share sessions ($sessions sessions)"
wait_run_field "${run[research]}" status completed
wait_run_field "${run[fail]}" status failed
wait_run_field "${run[plan]}" attention.kind plan-approval
[[ $(run_field "${run[demo-stream]}" status) == running ]] || fail "demo-stream is not running"
[[ $(run_field "${run[plan]}" turnIntent) == plan-first ]] || fail "the plan run is not plan-first"
session=$(run_field "${run[research]}" sessionId)
td artifacts list "$session" | grep -q report.md || fail "the research run saved no report.md"
pass "one project, four runs in four sessions: streaming, waiting for a plan, completed, failed"

# The closing hint works from a shell that has none of this test's settings.
hint=$(awk '/^Open the dashboard/ { getline; getline; print; exit }' <<<"$out")
[[ $hint == *TASKDECK_HOME=* ]] || fail "the closing hint does not name TASKDECK_HOME: '$hint'"
mkdir "$TUI_TMP/elsewhere"
listed=$(cd "$TUI_TMP/elsewhere" && env -u TASKDECK_HOME HOME="$TUI_TMP/elsewhere" \
	sh -c "$hint projects list") || fail "'$hint projects list' failed from another shell"
grep -q "demo" <<<"$listed" || fail "'$hint' reaches another service: $listed"
pass "the closing hint ($hint) reaches the demo service from another shell"

# Again: nothing new without --again; four more with it.
out=$(td demo 2>"$TUI_TMP/demo.err")
grep -q "already has runs" "$TUI_TMP/demo.err" || fail "a second taskdeck demo did not say it starts nothing"
[[ $(awk '$1 == "run"' <<<"$out") == "" ]] || fail "a second taskdeck demo started runs"
(($(td runs list --project "$project" | tail -n +2 | wc -l) == 4)) || fail "a second taskdeck demo changed the run count"
td --json demo --again >"$TUI_TMP/again.json"
grep -o '"model":"[a-z-]*"' "$TUI_TMP/again.json" | sort | tr '\n' ' ' |
	grep -qx '"model":"demo-stream" "model":"fail" "model":"plan" "model":"research" ' ||
	fail "taskdeck --json demo --again did not list the four runs: $(cat "$TUI_TMP/again.json")"
(($(td runs list --project "$project" | tail -n +2 | wc -l) == 8)) || fail "--again did not start four more runs"
(($(td projects list | awk '$2 == "demo"' | wc -l) == 1)) || fail "--again made a second demo project"
pass "a second demo starts nothing; --again starts four more in the same project"

# What ./quickstart opens: the dashboard on the demo project.
dash_start 120x36
wait_live
wait_for "demo"
for prompt in "Stream a status report" "Plan, then write a report" "Research SQLite WAL mode" \
	"A task that fails"; do
	wait_for "$prompt"
done
# It opens on the newest session: the live run, streaming.
wait_for "Reading the service logs"
wait_for_re "running +[0-9]+ +waiting|[0-9]+ running +[0-9]+ waiting"
dash_quit
pass "the dashboard shows the demo"

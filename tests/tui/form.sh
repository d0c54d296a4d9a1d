#!/usr/bin/env bash
# A server's form (elicitation) in the dashboard: the prompt's box shows the
# form's fields with their types, descriptions and defaults, and the CLI
# command that answers this prompt; a opens the fields to fill in (the
# defaults filled in): left as they are, a required field without a default
# is refused with the reason; a value typed there answers it and the box goes.  The server is tests/mcp-failserver in its form mode.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_setup
export TASKDECK_REPLAY_DIR=$TD_SRCDIR/tests/mcp/forms
svc_start

out=$(td connectors add forms --command "$TD_BUILDDIR/tests/mcp-failserver" --arg form --enable) ||
	fail "connectors add failed: $out"
project=$(new_project forms)
read -r run _ < <(start_run "$project" form-values "call the form tool" --provider replay \
    --permission workspace-write)
prompt=
for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
	prompt=$(td permissions list --run "$run" | awk '$1 ~ /^prm_/ && $2 == "pending" { print $1 }')
	[[ -n $prompt ]] && break
	tick
done
[[ -n $prompt ]] || fail "no prompt for the form"

# Completion: --field offers the form's fields, --model the models known here.
got=$(td __complete permissions allow "$prompt" --field "")
grep -q "^age=	integer, required: Your age" <<<"$got" || fail "--field <TAB> offers no age=: $got"
grep -q "^name=	string" <<<"$got" || fail "--field <TAB> offers no name=: $got"
got=$(td __complete permissions allow "$prompt" --field "a")
[[ $got == "age="* && $(wc -l <<<"$got") == 1 ]] || fail "--field a<TAB> gives '$got'"
got=$(td __complete run --model "")
grep -q "^form-values\($\|	\)" <<<"$got" || fail "--model <TAB> offers no form-values: $got"
# a provider that lists nothing (unknown here): what the runs were made with, its provider told
got=$(td __complete run --provider nosuch --model "")
grep -q "^form-values	replay" <<<"$got" || fail "--model <TAB> offers no model a run used: $got"
pass "completion: --field offers the prompt's form fields, --model the models runs used"

dash_start 120x40
wait_live
keys 2
wait_for "A server's form"
wait_for "forms asks: Who is asking?"
wait_for 'name (string): Your name [default: "anon"]'
wait_for "age (integer, required): Your age"
wait_for "subscribe (boolean): - [default: false]"
pass "the prompt's box shows the form's fields, types, descriptions and defaults"

# The hint names this prompt, not a literal ID.
assert_screen "$prompt --field NAME=VALUE"
assert_not_screen "allow ID --field"
# a: the fields to fill in, with their defaults; left as they are, the
# required one without a default is refused with the reason.
keys a
wait_for "Fill in the form of forms__elicitation"
wait_for "name=anon"
wait_for "age="
wait_for "subscribe=false"
keys Enter
wait_for "[y/N]"
keys y
wait_for "the form needs a value for age"
[[ $(td permissions show "$prompt" | sed -n 's/^status: //p') == pending ]] ||
	fail "a refused allow answered the prompt"
pass "a fills in the defaults; a required field left empty is refused with the reason"

# The value typed in the modal answers it.
keys 2
wait_for "A server's form"
keys a
wait_for "Fill in the form of forms__elicitation"
# the cursor waits on the first field without a value
type_text "7"
wait_for "age=7"
keys Enter
wait_for 'Allow forms__elicitation with'
wait_for '"age":"7"'
keys y
wait_gone "A server's form"
[[ $(td permissions show "$prompt" | sed -n 's/^status: //p') == allowed ]] ||
	fail "the form filled in the modal did not answer the prompt"
pass "a value typed in the modal answers the form; the box goes"
dash_quit
pass "q exits cleanly"

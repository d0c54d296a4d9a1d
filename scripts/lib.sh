# shellcheck shell=bash
# scripts/lib.sh: shell helpers shared by ./quickstart and bench/*/run.
# Source it from bash (it defines functions only); the caller sets -euo pipefail.

td_say() { printf '==> %s\n' "$*"; }
td_warn() { printf 'warning: %s\n' "$*" >&2; }
td_die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Prints, one a line, the Debian packages among "$@" that are not installed.
td_missing_packages() {
	local pkg status
	for pkg in "$@"; do
		status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
		[[ $status == "install ok installed" ]] || printf '%s\n' "$pkg"
	done
}

# Installs the Debian packages among "$@" that are missing: as root directly,
# else through passwordless sudo; otherwise prints the command to run and exits 1.
td_ensure_packages() {
	local -a missing as_root
	if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
		td_die "this script installs Debian packages with apt-get; on another system install the equivalents of: $*"
	fi
	mapfile -t missing < <(td_missing_packages "$@")
	((${#missing[@]} > 0)) || return 0

	if ((EUID == 0)); then
		as_root=()
	elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
		as_root=(sudo -n)
	else
		printf 'These Debian packages are missing: %s\n' "${missing[*]}" >&2
		printf 'Install them, then run this again:\n\n' >&2
		printf '  sudo apt-get update && sudo apt-get install -y --no-install-recommends %s\n\n' \
			"${missing[*]}" >&2
		exit 1
	fi
	td_say "installing ${missing[*]}"
	"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
	"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# True when process $1 exists and is not a zombie.
td_pid_alive() {
	kill -0 "$1" 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

# Reads a top-level string or number member of a flat JSON object file
# (enough for service.json; no jq on a fresh machine).
td_json_field() {
	sed -n 's/.*"'"$2"'":"\{0,1\}\([^",}]*\).*/\1/p' "$1" | head -n 1
}

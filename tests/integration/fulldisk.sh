#!/usr/bin/env bash
# The full-disk rig (issue 17): runs a program with a small file system of its
# own that it may fill and free again, with no privilege and nothing outside
# touched.
#
#   fulldisk.sh SIZE PROGRAM [ARGS...]
#
# Inside a private user and mount namespace (unshare -rm) a tmpfs of SIZE
# (e.g. 64m) is mounted on a fresh directory, exported as TD_FULLDISK_DIR and
# as TD_TEST_TMPDIR, so that the harness (tests/integration/harness.c) makes
# the homes of the services it starts there: TASKDECK_HOME is on the small
# disk.  The program fills it (harness_fill_disk) and frees it
# (harness_free_disk) as it likes.  The tmpfs goes away with the namespace.
# Exits with PROGRAM's status; 77 (skipped) when user namespaces are off here.
set -euo pipefail

(($# >= 2)) || { echo "usage: $0 SIZE PROGRAM [ARGS...]" >&2; exit 2; }
size=$1
shift

if ! unshare -rm true 2>/dev/null; then
	echo "fulldisk.sh: user namespaces are not available here (unshare -rm fails); skipped" >&2
	exit 77
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/tdfull-XXXXXX")
trap 'rmdir "$dir" 2>/dev/null || true' EXIT
status=0
# shellcheck disable=SC2016 # expanded by the inner shell
unshare -rm bash -c '
	set -e
	dir=$1 size=$2
	shift 2
	mount -t tmpfs -o "size=$size,mode=0700" tdfull "$dir"
	export TD_FULLDISK_DIR=$dir TD_TEST_TMPDIR=$dir
	"$@"
' fulldisk "$dir" "$size" "$@" || status=$?
exit "$status"

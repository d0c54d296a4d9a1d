#!/usr/bin/env bash
# A full disk under a real taskdeckd and under the artifact store, in the
# full-disk rig (tests/integration/fulldisk.sh): tests/integration/test-fulldisk,
# one test at a time (each fills the one disk).
set -euo pipefail
: "${TD_BUILDDIR:?run through make check}" "${TD_SRCDIR:?run through make check}"
exec bash "$TD_SRCDIR/tests/integration/fulldisk.sh" 64m \
	"$TD_BUILDDIR/tests/integration/test-fulldisk" --jobs=1 "$@"

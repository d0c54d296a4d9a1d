#!/usr/bin/env bash
# The model field of the new-run editor offers what the provider lists
# (GET /api/v1/providers/{name}/models; the replay provider: its transcripts):
# the names that start with what was typed, and Up/Down choose among them.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
tui_start

new_project choosing >/dev/null
dash_start 120x36
wait_live
wait_for "choosing"

keys n
wait_for "New run in choosing"
type_text "Write a report"
keys Tab Tab
wait_for "Up/Down: ask big-artifact burst"
pass "the model field lists the default provider's models"
type_text "rev"
wait_for "Up/Down: review-approve review-changes"
keys Down
wait_for "model:    review-approve"
keys Down Down
wait_for "model:    reviewed"
keys Up
wait_for "model:    review-changes"
pass "Up/Down choose among the models that start with what was typed"
keys Tab
wait_for "attempts:"
keys Tab
wait_for "provider: default   model: review-changes"
pass "the chosen model is the run's"
keys Escape
wait_for "Drop the typed prompt? [y/N]"
keys y
wait_gone "Drop the typed prompt?"
dash_quit
pass "q exits cleanly"

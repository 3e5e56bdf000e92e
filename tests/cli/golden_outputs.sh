#!/usr/bin/env bash
# fit, plan and simulate JSON on every shipped combination are identical to the record made before the layout
# refactor (issue 30), apart from the plan's `layout` section: scripts/golden_outputs.sh --check.
set -u
bin="$1"; root="$2"
command -v jq >/dev/null || { echo "golden_outputs: jq is not installed (scripts/setup.sh installs it)"; exit 2; }
exec bash "$root/scripts/golden_outputs.sh" --check "$bin"

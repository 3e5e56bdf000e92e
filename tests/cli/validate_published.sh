#!/usr/bin/env bash
# The public validation table (docs/VALIDATION.md): every row predicts, and the median |error| over the complete rows
# is no worse than the one recorded in docs/validation/rows.json by more than 2 points.
set -euo pipefail
bin="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
bash "$root/scripts/validate_published.sh" --check "$bin" | tail -3

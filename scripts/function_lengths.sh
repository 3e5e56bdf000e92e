#!/usr/bin/env bash
# Functions longer than LIMIT lines (default 150) in the given files, longest first: "lines file:line name".
# Uses universal-ctags (scripts/setup.sh installs it). A function's lines run from its name to its closing brace.
#   scripts/function_lengths.sh [--limit N] FILE...
set -euo pipefail
limit=150
if [ "${1:-}" = "--limit" ]; then limit="$2"; shift 2; fi
command -v ctags >/dev/null || { echo "function_lengths: universal-ctags is not installed" >&2; exit 2; }
ctags --c++-kinds=f --language-force=c++ --fields=+ne -o - "$@" 2>/dev/null |
  awk -F'\t' -v lim="$limit" '{
    line = ""; end = ""
    for (i = 4; i <= NF; i++) { if ($i ~ /^line:/) line = substr($i, 6); if ($i ~ /^end:/) end = substr($i, 5) }
    if (end != "" && end - line + 1 > lim) print end - line + 1, $2 ":" line, $1
  }' | sort -rn

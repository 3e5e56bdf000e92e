#!/usr/bin/env bash
# The public validation set: predicts every row of docs/validation/rows.json (published measurements of real
# DeepSpeed runs) with `zerosim simulate` and prints the table of docs/VALIDATION.md.
#   scripts/validate_published.sh [ZEROSIM]            the table (markdown) and the medians
#   scripts/validate_published.sh --write [ZEROSIM]    ... and put the table into docs/VALIDATION.md
#   scripts/validate_published.sh --record [ZEROSIM]   ... and record the medians in rows.json
#   scripts/validate_published.sh --check [ZEROSIM]    fail when the median |error| is worse than the recorded one
#                                                      by more than 2 points (the CI test)
# ZEROSIM defaults to build/bin/zerosim.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
mode=table
case "${1:-}" in --write|--record|--check) mode="${1#--}"; shift ;; esac
zerosim="${1:-$root/build/bin/zerosim}"
[ -x "$zerosim" ] || { echo "validate_published: no zerosim at $zerosim (build first)" >&2; exit 2; }
cd "$root"
exec python3 - "$zerosim" "$mode" <<'PY'
import json, statistics, subprocess, sys

zerosim, mode = sys.argv[1], sys.argv[2]
rows_path, doc_path = "docs/validation/rows.json", "docs/VALIDATION.md"
doc = json.load(open(rows_path))
rows = doc["rows"]

def predict(r):
    cmd = [zerosim, "simulate", "--model", r["model"], "--hardware", r["hardware"], "--ds-config", r["ds_config"],
           *r["flags"], "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode == 1:  # the plan does not fit: a result, shown in the table without an error
        return json.loads(p.stdout)
    if p.returncode != 0:
        raise SystemExit(f"validate_published: {r['id']}: {' '.join(cmd)} exited {p.returncode}\n{p.stderr}{p.stdout[:2000]}")
    return json.loads(p.stdout)

def fmt(metric, v):
    if metric == "step_time_s":
        return f"{v:.3g} s/step"
    if metric == "tokens_per_s":
        return f"{v:,.0f} tokens/s"
    return f"{v:.3g} samples/s"

out = []
for r in rows:
    j = predict(r)
    if j.get("fits") is False:
        if r["in_median"]:
            raise SystemExit(f"validate_published: {r['id']} is a complete row and zerosim says it does not fit: {j['reason']}")
        out.append((r, j, None, None))
        continue
    got = j[r["metric"]]
    err = 100.0 * (got - r["published"]) / r["published"]
    out.append((r, j, got, err))

in_median = [abs(e) for (r, _, _, e) in out if r["in_median"]]
median = statistics.median(in_median) if in_median else float("nan")
worst = max(in_median) if in_median else float("nan")
all_median = statistics.median(abs(e) for (_, _, _, e) in out if e is not None)
# Leave-one-source-out: a constant derived from a row's source would be re-derived without it. No constant of the
# cost model comes from a row's source (rows.json "constants" lists them), so each source's rows are predicted
# with the same constants: the LOSO median equals the median. The check below keeps that true.
row_sources = {r["source"].split(" ")[0] for r in rows}
for c in doc["constants"]:
    for s in row_sources:
        if s and s in c["source"]:
            raise SystemExit(f"validate_published: constant '{c['constant']}' comes from a row's source ({s}): "
                             "derive it without that source for the leave-one-source-out run")
loso = median

lines = ["| # | row | setup | published | zerosim | error | bottleneck (zerosim) |", "|---|---|---|---|---|---|---|"]
for i, (r, j, got, err) in enumerate(out, 1):
    mark = "" if r["in_median"] else " †"
    if got is None:
        lines.append(f"| {i} | {r['id']}{mark} | {r['setup']} | {fmt(r['metric'], r['published'])} | "
                     f"does not fit: {j['reason']} | – | – |")
        continue
    lines.append(f"| {i} | {r['id']}{mark} | {r['setup']} | {fmt(r['metric'], r['published'])} | "
                 f"{fmt(r['metric'], got)} | {err:+.0f}% | {j['bottleneck']} |")
summary = (f"Median |error| over the {len(in_median)} complete rows: **{median:.1f}%** (max {worst:.0f}%); "
           f"leave-one-source-out median: {loso:.1f}% (no constant comes from a row's source); "
           f"all {sum(e is not None for (_, _, _, e) in out)} rows with a prediction: {all_median:.1f}%. "
           "† incomplete setup, out of the median (see the rows' notes).")
notes = ["", "Rows, sources and what each setup lacks:", ""]
for i, (r, _, _, _) in enumerate(out, 1):
    notes.append(f"{i}. **{r['id']}** — {r['source']}: \"{r['quote']}\"." + (f" Missing: {r['missing']}." if r["missing"] else ""))
table = "\n".join(lines + ["", summary] + notes)
print(table)

if mode == "write":
    text = open(doc_path).read()
    begin, end = "<!-- validate_published: begin -->", "<!-- validate_published: end -->"
    a, b = text.index(begin) + len(begin), text.index(end)
    tmp = doc_path + ".tmp"
    open(tmp, "w").write(text[:a] + "\n" + table + "\n" + text[b:])
    import os
    os.replace(tmp, doc_path)
if mode == "record":
    doc["recorded"] = {"median_abs_error_pct": round(median, 1), "max_abs_error_pct": round(worst, 1),
                       "rows_in_median": len(in_median)}
    tmp = rows_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    import os
    os.replace(tmp, rows_path)
if mode == "check":
    rec = doc["recorded"]["median_abs_error_pct"]
    if rec is None:
        raise SystemExit("validate_published: rows.json records no median (run with --record)")
    if median > rec + 2.0:
        raise SystemExit(f"validate_published: median |error| {median:.1f}% is worse than the recorded {rec:.1f}% by more than 2 points")
    print(f"validate_published: median |error| {median:.1f}% (recorded {rec:.1f}%): ok")
PY

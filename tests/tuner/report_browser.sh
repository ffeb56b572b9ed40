#!/usr/bin/env bash
# report.html in a real browser (headless Chromium, as CI installs it):
#  1. the page references nothing outside itself (no scripts, links, images, url(), src/href);
#  2. it renders: Chromium loads it with every host name unresolvable and its network log
#     holding no request the page started (initiator: the file's opaque origin; Chromium's own
#     background fetches have none), the DOM it builds has every chart and table, and a screenshot
#     is written;
#  3. the numbers it shows carry exactly colltune.json's values (data-json / data-value cells).
# Exits 77 (ctest: skipped) where Chromium or python3 is not installed.
# Usage: report_browser.sh path/to/colltune
set -uo pipefail
colltune=$1
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome) ||
  { echo "skipped: no Chromium on this machine"; exit 77; }
command -v python3 >/dev/null || { echo "skipped: no python3 to read the network log and colltune.json"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED: $*"; exit 1; }

"$colltune" tune --topology dgx-h100:nodes=2 --model resnet50 --out "$dir/out" >/dev/null || fail "tune"
page="$dir/out/report.html"

grep -Eiq '<script|<link|<img|<iframe|<object|@import|url\(|(src|href)=' "$page" &&
  fail "report.html references something outside itself: $(grep -Eio '<script|<link|<img|<iframe|<object|@import|url\(|(src|href)=[^ >]*' "$page" | head -3)"

flags=(--headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run --user-data-dir="$dir/profile"
       --disable-background-networking --disable-component-update --disable-sync --no-pings
       --host-resolver-rules="MAP * ~NOTFOUND" --log-net-log="$dir/net.json")
timeout 120 "$browser" "${flags[@]}" --dump-dom "file://$page" >"$dir/dom.html" 2>"$dir/browser.log" ||
  fail "Chromium could not load the page: $(tail -3 "$dir/browser.log")"
python3 - "$dir/net.json" <<'PY' || fail "the page made a network request"
import json, sys
log = json.load(open(sys.argv[1]))
page = [e["params"]["url"] for e in log["events"]
        if isinstance(e.get("params"), dict) and "url" in e["params"]
        and e["params"].get("initiator", "not an origin") != "not an origin"
        and not e["params"]["url"].startswith("file:")]
if page:
    sys.exit("requests from the page: " + ", ".join(sorted(set(page))[:3]))
PY
svgs=$(grep -o '<svg' "$dir/dom.html" | wc -l)
[ "$svgs" -ge 4 ] || fail "the rendered page has $svgs charts, expected busbw, two heatmaps and the timeline"
for heading in "Top configurations" "Algorithm per message size" "The table behind nccl_tuner.conf"; do
  grep -q "$heading" "$dir/dom.html" || fail "the rendered page lacks '$heading'"
done
grep -q "(chosen)" "$dir/dom.html" || fail "the chosen configuration is not marked in the top table"
timeout 120 "$browser" "${flags[@]}" --window-size=1400,3000 --screenshot="$dir/shot.png" "file://$page" \
  >/dev/null 2>&1 || fail "no screenshot"
[ "$(stat -c %s "$dir/shot.png" 2>/dev/null || echo 0)" -gt 20000 ] || fail "the screenshot is (nearly) empty"

python3 - "$dir/dom.html" "$dir/out/colltune.json" <<'PY' || fail "numbers differ from colltune.json"
import json, re, sys
dom = open(sys.argv[1]).read()
doc = json.load(open(sys.argv[2]))
cells = re.findall(r'data-json="([^"]+)" data-value="([^"]+)"', dom)
assert len(cells) >= 3, f"only {len(cells)} checked cells"
for key, value in cells:
    node = doc
    for part in key.split("."):
        node = node[part]
    if float(value) != float(node):
        sys.exit(f"{key}: page {value}, colltune.json {node}")
print(f"{len(cells)} numbers equal colltune.json")
PY
echo "report.html: renders, no external requests, numbers equal colltune.json"

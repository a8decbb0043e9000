#!/usr/bin/env bash
# Render a `harness report` in headless Chromium (Debian's package) and check the DOM.
#
#   apt-get install -y --no-install-recommends chromium      # once, as root
#   benchmarks/render_report.sh reports/<name>               # or .../report.html
#
# Writes <dir>/screenshot.png (1280 px wide, full report height up to 16000 px) and
# <dir>/dom.html (the DOM as Chromium built it), then fails if the DOM holds a <script>
# element or loads anything that is not an embedded data: image. Open the screenshot
# to look at the page (tests/integration/test_report.py::test_renders_in_headless_chromium does the
# same checks automatically when /usr/bin/chromium exists).
set -euo pipefail
target=${1:?usage: $0 REPORT_DIR_OR_HTML [HEIGHT_PX]}
height=${2:-6000}
if [ -d "$target" ]; then html="$target/report.html"; else html="$target"; fi
[ -f "$html" ] || { echo "render_report: $html: no such file" >&2; exit 2; }
chromium=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chromium" ] || { echo "render_report: chromium not found (apt-get install -y chromium)" >&2; exit 2; }
dir=$(cd "$(dirname "$html")" && pwd)
url="file://$dir/$(basename "$html")"
flags=(--headless --no-sandbox --disable-gpu --disable-background-networking --hide-scrollbars)
"$chromium" "${flags[@]}" --dump-dom "$url" > "$dir/dom.html" 2>/dev/null
"$chromium" "${flags[@]}" --window-size=1280,"$height" --screenshot="$dir/screenshot.png" "$url" 2>/dev/null
if grep -qi '<script' "$dir/dom.html"; then
  echo "render_report: FAIL: the rendered DOM holds a <script> element" >&2; exit 1
fi
if grep -Eoi '(src|href)="[^"#][^"]*"' "$dir/dom.html" | grep -vq 'src="data:image/png;base64,'; then
  echo "render_report: FAIL: the page references something outside itself" >&2; exit 1
fi
echo "rendered: $dir/screenshot.png ($(grep -c '<img' "$dir/dom.html") embedded plots; DOM in $dir/dom.html)"

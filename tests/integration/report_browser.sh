#!/usr/bin/env bash
# report_browser: compare's report.html opened in a real browser (headless Chromium). A tiny
# compare with --timeline writes DIR/report.html; Chromium loads it from file://, dumps the DOM and
# takes a screenshot. The page's text holds the MFU of each fabric as comparison.json gives it and
# the per-collective rows; every <img> is a data: URI holding a PNG that decodes; nothing in the
# page names an http(s) URL; the timeline links point at files of DIR; the browser's log reports
# no resource that failed to load; the screenshot is a PNG of the window's size.
# Exits 77 (skipped) when chromium is not installed (apt-get install chromium).
set -euo pipefail
. "$(dirname "$0")/common.sh"

browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "SKIP: chromium is not installed (apt-get install --no-install-recommends chromium)"
  exit 77
fi
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || die "python3-matplotlib is needed for report.html"
dir=$WORK/cmp
run_ok compare --gpus 16 --model llama3-8b --tp 8 --pp 2 --global-batch 8 --timeline --out "$dir"
[ -s "$dir/report.html" ] || die "no $dir/report.html"
grep -q '"report.html"' "$dir/manifest.json" || die "manifest.json does not list report.html"
export HOME=$WORK/home # the browser's profile and caches stay in the scratch directory
mkdir -p "$HOME"
url="file://$dir/report.html"
flags=(--headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$WORK/profile")
timeout 120 "$browser" "${flags[@]}" --enable-logging=stderr --v=0 --dump-dom "$url" >"$WORK/dom.html" 2>"$WORK/dom.log" ||
  { cat "$WORK/dom.log" >&2; die "chromium --dump-dom failed"; }
timeout 120 "$browser" "${flags[@]}" --window-size=1280,2400 --screenshot="$WORK/shot.png" "$url" \
  >/dev/null 2>"$WORK/shot.log" || { cat "$WORK/shot.log" >&2; die "chromium --screenshot failed"; }
# Whether every image of the page loaded, as the browser sees it: a page of the scratch directory
# frames the report and counts its images that are incomplete or have no width.
cat >"$WORK/probe.html" <<HTML
<html><body><div id="r">pending</div><iframe id="f" src="$url"></iframe><script>
document.getElementById("f").onload = function () {
  var imgs = this.contentDocument.images, bad = 0;
  for (var i = 0; i < imgs.length; i++) if (!imgs[i].complete || imgs[i].naturalWidth == 0) bad++;
  document.getElementById("r").textContent = "images " + imgs.length + " broken " + bad;
};
</script></body></html>
HTML
timeout 120 "$browser" "${flags[@]}" --allow-file-access-from-files --virtual-time-budget=5000 --dump-dom \
  "file://$WORK/probe.html" >"$WORK/probe.dom" 2>/dev/null || die "chromium could not load the probe page"
probe=$(grep -o 'id="r">[^<]*' "$WORK/probe.dom" | cut -d'>' -f2)
echo "in the browser: $probe"
[[ "$probe" =~ ^images\ ([0-9]+)\ broken\ 0$ ]] && [ "${BASH_REMATCH[1]}" -ge 2 ] ||
  die "the browser did not load every image of report.html: '$probe'"
if grep -E "Failed to load resource|net::ERR_|Not allowed to load local resource" "$WORK/dom.log" "$WORK/shot.log"; then
  die "the browser could not load a resource of the page (above)"
fi
python3 - "$dir" "$WORK/dom.html" "$WORK/shot.png" <<'PY' || die "the report is wrong (above)"
import base64, html.parser, json, re, struct, sys
d, dom_file, shot = sys.argv[1:]
dom = open(dom_file).read()
c = json.load(open(d + "/comparison.json"))

class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.text, self.imgs, self.links = [], [], []
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.imgs.append(a.get("src", ""))
        if tag in ("a", "link", "script", "iframe"):
            self.links.append(a.get("href") or a.get("src") or "")
    def handle_data(self, data):
        self.text.append(data)

p = Page()
p.feed(dom)
text = " ".join(p.text)
mfu = {r["key"]: r["values"] for r in c["rows"]}["mfu"]
for f, v in zip(c["fabrics"], mfu):
    want = "%.2f %%" % v
    assert want in text, "MFU of %s (%s) is not in the page" % (f, want)
    print("%s MFU %s: in the page" % (f, want))
for r in c["collectives"]:
    assert "%s %s" % (r["op"], r["group"]) in text, r
assert c["scenario"]["title"] in text
assert len(p.imgs) >= 2, p.imgs
for src in p.imgs:
    assert src.startswith("data:image/png;base64,"), src[:60]
    png = base64.b64decode(src.split(",", 1)[1])
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "an image is not a PNG"
    w, h = struct.unpack(">II", png[16:24])
    assert w > 100 and h > 100, (w, h)
print("%d images, all data: URIs of PNGs" % len(p.imgs))
assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", dom), "the page refers to a URL"
assert not re.search(r"https?://", open(d + "/report.html").read()), "report.html names an http(s) URL"
for href in p.links:
    assert href in ("ib/timeline.json", "roce/timeline.json"), href
    assert __import__("os").path.isfile(d + "/" + href), href
assert sorted(p.links) == ["ib/timeline.json", "roce/timeline.json"], p.links
s = open(shot, "rb").read()
assert s[:8] == b"\x89PNG\r\n\x1a\n", "the screenshot is not a PNG"
print("screenshot %dx%d, %d bytes" % (struct.unpack(">II", s[16:24]) + (len(s),)))
assert struct.unpack(">II", s[16:24]) == (1280, 2400)
PY
echo "report_browser: ok"

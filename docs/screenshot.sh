#!/usr/bin/env bash
# Regenerates docs/report.png, the picture of the HTML report in README.md:
# the run of `pace demo` (2000 requests/s for 10 s against the built-in
# server, which freezes for 1 s after 5 s) written with --html, then
# photographed by headless Chromium.
#
#   docs/screenshot.sh            # about 15 seconds
#
# Needs cargo and chromium (apt-get install chromium). Loopback only.
set -euo pipefail
export LC_ALL=C
cd "$(dirname "${BASH_SOURCE[0]}")/.."

cargo build --release --quiet
pace=target/release/pace
work=$(mktemp -d)
server=
cleanup() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

# The stall counts from the server's start, so the run starts right after.
"$pace" serve --port 0 --stall-at 5s --stall-for 1s 2>"$work/serve.log" &
server=$!
url=
for _ in $(seq 100); do
    url=$(sed -n 's/^pace serve: listening on \(http[^ ]*\).*/\1/p' "$work/serve.log")
    [ -n "$url" ] && break
    sleep 0.05
done
if [ -z "$url" ]; then
    echo "screenshot.sh: the built-in server did not start:" >&2
    cat "$work/serve.log" >&2
    exit 1
fi

"$pace" -t2 -c50 -d10s -T5s -R2000 -U --html "$work/report.html" "$url" >/dev/null
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --user-data-dir="$work/profile" --window-size=1000,2400 \
    --screenshot="$work/report.png" "file://$work/report.html" 2>/dev/null
mv "$work/report.png" docs/report.png
echo "wrote docs/report.png"

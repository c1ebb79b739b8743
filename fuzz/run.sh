#!/usr/bin/env bash
# Runs fuzz targets one after another, each for a bounded time, starting
# from the seeds and the corpus gathered so far (fuzz/corpus/, not in git).
#
#   fuzz/run.sh [SECONDS] [TARGET...]     (default: 60 s each, every target)
#
# A crash stops the run; libFuzzer saves the input in fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo +nightly fuzz list)
fi
for target in "${targets[@]}"; do
    case $target in
        cli) dict=dict/cli.dict ;;
        url) dict=dict/url.dict ;;
        http2_response | serve_http2) dict=dict/http2.dict ;;
        units | lua_transfer) dict= ;;
        *) dict=dict/http.dict ;;
    esac
    # Lua allocates through the Rust allocator: AddressSanitizer makes that
    # target 4x slower, and it is after panics, hangs and stack overflows.
    build=()
    if [ "$target" = lua_transfer ]; then
        build=(--sanitizer none --target-dir target/no-sanitizer)
    fi
    mkdir -p "corpus/$target"
    cargo +nightly fuzz run "${build[@]}" "$target" "corpus/$target" "seeds/$target" -- \
        -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 -print_final_stats=1 \
        ${dict:+-dict=$dict}
done

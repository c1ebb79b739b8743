#!/usr/bin/env bash
# Builds the benchmark's peers, oha and wrk2, into $PEERS (default: bench/peers
# in this clone, git-ignored), where bench/compare.py looks for them:
#   $PEERS/oha/bin/oha   cargo install oha $OHA_VERSION (default 1.16.0) --locked
#   $PEERS/wrk2/wrk      giltene/wrk2 at $WRK2_COMMIT, built against the system
#                        LuaJIT and OpenSSL instead of its bundled tarballs
#   $PEERS/ghz/bin/ghz   go install ghz $GHZ_VERSION (default v0.93.0), the
#                        gRPC peer
#   $PEERS/grpc-test-server  tests/grpc-go (grpc-go's TestService), the
#                        gRPC server of compare.py's grpc part
# usage: bench/peers.sh [oha] [wrk2] [ghz] [grpc-server]
#        (no argument: oha and wrk2)
# $WRK2_GIT is where wrk2's source is cloned from (default
# https://github.com/giltene/wrk2.git; a local clone or bare mirror works).
# Needs: cargo (oha); git, cc, pkg-config, luajit, libluajit-5.1-dev,
# libssl-dev, zlib1g-dev (wrk2):
#   apt-get install -y git gcc pkg-config luajit libluajit-5.1-dev libssl-dev zlib1g-dev
# None of the peers' code is part of this repository.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PEERS=${PEERS:-$here/peers}
OHA_VERSION=${OHA_VERSION:-1.16.0}
WRK2_GIT=${WRK2_GIT:-https://github.com/giltene/wrk2.git}
WRK2_COMMIT=${WRK2_COMMIT:-44a94c17d8e6a0bac8559b53da76848e430cb7a7}
GHZ_VERSION=${GHZ_VERSION:-v0.93.0}

die() { echo "peers.sh: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null || die "missing $1 ($2)"; }

build_oha() {
    need cargo 'install Rust: https://rustup.rs'
    cargo install oha --version "$OHA_VERSION" --locked --root "$PEERS/oha" \
        || die "cargo install oha $OHA_VERSION failed (try OHA_VERSION=<a newer version>)"
    "$PEERS/oha/bin/oha" --version
}

build_wrk2() {
    local apt='apt-get install -y git gcc pkg-config luajit libluajit-5.1-dev libssl-dev zlib1g-dev'
    need git "$apt"
    need cc "$apt"
    need pkg-config "$apt"
    need luajit "$apt"
    pkg-config --exists luajit || die "missing libluajit-5.1-dev ($apt)"
    [ -e /usr/include/openssl/ssl.h ] || pkg-config --exists openssl || die "missing libssl-dev ($apt)"
    [ -e /usr/include/zlib.h ] || pkg-config --exists zlib || die "missing zlib1g-dev ($apt)"

    local src=$PEERS/wrk2-src
    if [ ! -d "$src/.git" ]; then
        rm -rf "$src"
        git clone -q "$WRK2_GIT" "$src" || die "cannot clone wrk2 from $WRK2_GIT (set WRK2_GIT)"
    fi
    git -C "$src" -c advice.detachedHead=false checkout -q "$WRK2_COMMIT" \
        || die "wrk2 commit $WRK2_COMMIT not in $src (set WRK2_COMMIT)"

    local obj=$src/obj
    rm -rf "$obj" && mkdir -p "$obj" "$PEERS/wrk2"
    # wrk.lua as LuaJIT bytecode: the symbol luaJIT_BC_wrk that require "wrk"
    # finds in the binary (hence -Wl,-E).
    (cd "$src/src" && luajit -b wrk.lua "$obj/bytecode.o")
    # The sources of wrk2's Makefile (ae.c includes ae_epoll.c itself).
    local c
    for c in wrk net ssl aprintf stats script units ae zmalloc http_parser tinymt64 hdr_histogram; do
        # shellcheck disable=SC2046  # pkg-config's flags are words
        # (-include sys/time.h: script.c calls gettimeofday without it.)
        cc -std=c99 -O2 -D_REENTRANT -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -include sys/time.h \
            $(pkg-config --cflags luajit) -DluaL_reg=luaL_Reg -Wno-deprecated-declarations \
            -c -o "$obj/$c.o" "$src/src/$c.c"
    done
    # shellcheck disable=SC2046
    cc -Wl,-E -o "$PEERS/wrk2/wrk" "$obj"/*.o \
        $(pkg-config --libs luajit) -lssl -lcrypto -lpthread -lm -ldl -lz
    # wrk -v prints its version and usage, and exits 1.
    local version
    version=$("$PEERS/wrk2/wrk" -v 2>&1 || true)
    grep -m1 '^wrk ' <<<"$version" || die "$PEERS/wrk2/wrk does not run: $(head -1 <<<"$version")"
}

build_ghz() {
    need go 'install Go 1.26 or later'
    GOBIN="$PEERS/ghz/bin" go install -modcacherw "github.com/bojand/ghz/cmd/ghz@$GHZ_VERSION" \
        || die "go install ghz $GHZ_VERSION failed (try GHZ_VERSION=<another version>)"
    "$PEERS/ghz/bin/ghz" --version
}

build_grpc-server() {
    need go 'install Go 1.26 or later'
    (cd "$here/../tests/grpc-go" && go build -buildvcs=false -modcacherw -o "$PEERS/grpc-test-server" .) \
        || die "go build of tests/grpc-go failed"
}

targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(oha wrk2)
for t in "${targets[@]}"; do
    case $t in
        oha|wrk2|ghz|grpc-server) ;;
        *) die "unknown peer $t (peers: oha, wrk2, ghz, grpc-server)" ;;
    esac
done
mkdir -p "$PEERS"
for t in "${targets[@]}"; do
    "build_$t"
done
echo "peers.sh: built ${targets[*]} in $PEERS"

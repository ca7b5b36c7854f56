#!/usr/bin/env bash
# Builds and runs the libFuzzer targets of Fuzz/ (Fuzz/README.md says what each one checks).
#
#   scripts/fuzz.sh build                 build every target, optimised, into .build/fuzz/
#   scripts/fuzz.sh run SECONDS [TARGET…]  build, then fuzz each target for SECONDS, one after another;
#                                         new inputs go to .build/fuzz/corpus-TARGET, the seeds are
#                                         Fuzz/corpus/TARGET (make fuzz)
#   scripts/fuzz.sh runs COUNT [TARGET…]  the same as run, but each target for COUNT executions (the long
#                                         runs of Fuzz/README.md: runs 10000000)
#   scripts/fuzz.sh check SECONDS         build unoptimised into .build/fuzz-check/ (half the compile
#                                         time, and Swift's debug checks on), then every target over its
#                                         seeds plus SECONDS of fuzzing (make fuzz-check, make test)
#
# Targets: packet reassembly frame path socks proxyheader handshake record json config cli. SwiftPM is
# not involved: each module under test is compiled once by swiftc into a static library with
# libFuzzer's coverage instrumentation and AddressSanitizer, with -enable-testing so that the entry
# points can reach internal API (`@testable import`), and with the package name SwiftPM gives the
# modules, which `package` declarations need; the C shims SluiceIO imports by clang, with a module
# map of our own (SwiftPM writes one for its build only). Independent modules, and then the targets,
# build in parallel.
# A crash stops the run and leaves crash-<sha1> in the build directory.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v swiftc >/dev/null || export PATH="$PATH:/opt/swift/usr/bin"

if [[ ${1:-} == check ]]; then OUT=$PWD/.build/fuzz-check OPT=-Onone; else OUT=$PWD/.build/fuzz OPT=-O; fi
JOBS=$(nproc)
TARGETS=(packet reassembly frame path socks proxyheader handshake record json config cli)
FLAGS=(-sanitize=fuzzer,address -parse-as-library "$OPT" -package-name sluice -enable-testing
       -I "$OUT" -I "$OUT/CSluiceShims" -I Sources/CSodium -I Sources/CGcrypt -L "$OUT")

# The modules under test and the ones they import, in rounds: each one's dependencies are built in a
# round before it (DEPS; a module that gains an import needs it there and here).
ROUNDS=("SluiceWire SluiceJSON SluiceSystem SluiceBase64 SluiceLog CSluiceShims"
        "SluiceLoop SluiceMux SluiceConfig SluiceSocks SluiceProxyProtocol"
        "SluiceIO"
        "SluiceCrypto")
# A module is rebuilt when its sources or the library of a module it imports is newer than its own.
declare -A DEPS=([SluiceLoop]="CSluiceShims SluiceLog SluiceSystem" [SluiceIO]="CSluiceShims SluiceLoop SluiceSystem SluiceWire"
                 [SluiceMux]="SluiceWire" [SluiceSocks]="SluiceWire" [SluiceProxyProtocol]="SluiceWire"
                 [SluiceConfig]="SluiceSystem SluiceWire SluiceJSON SluiceBase64" [SluiceCrypto]="SluiceBase64 SluiceIO")
# target: entry-point directory, the modules it links (dependencies first is not needed: the linker
# gets them in reverse order), and extra sources
declare -A ENTRY=([packet]=PacketFuzz [reassembly]=ReassemblyFuzz [frame]=FrameFuzz [path]=PathFuzz [socks]=SocksFuzz [proxyheader]=ProxyHeaderFuzz
                  [handshake]=HandshakeFuzz
                  [record]=RecordFuzz [json]=JSONFuzz [config]=ConfigFuzz [cli]=CLIFuzz)
declare -A LINKS=([packet]="SluiceWire" [reassembly]="SluiceWire" [frame]="SluiceMux SluiceWire"
                  [path]="SluiceMux SluiceCrypto SluiceBase64 SluiceIO SluiceLoop SluiceLog SluiceSystem SluiceWire CSluiceShims" [socks]="SluiceSocks SluiceWire"
                  [proxyheader]="SluiceProxyProtocol SluiceWire"
                  [handshake]="SluiceCrypto SluiceBase64 SluiceIO SluiceLoop SluiceLog SluiceSystem SluiceWire CSluiceShims"
                  [record]="SluiceCrypto SluiceBase64 SluiceIO SluiceLoop SluiceLog SluiceSystem SluiceWire CSluiceShims" [json]="SluiceJSON"
                  [config]="SluiceConfig SluiceSystem SluiceWire SluiceJSON SluiceBase64"
                  [cli]="SluiceConfig SluiceSystem SluiceWire SluiceJSON SluiceBase64")
declare -A EXTRA=([config]="Fuzz/Support/FuzzScratch.swift" [cli]="Fuzz/Support/FuzzScratch.swift")

# Builds module $1 unless its library is newer than its sources and than the libraries it imports.
build_module() {
    local module=$1 dep deps=()
    local lib="$OUT/lib$module.a"
    for dep in ${DEPS[$module]:-}; do deps+=("$OUT/lib$dep.a"); done
    if [[ -f $lib ]] && [[ -z $(find "Sources/$module" "${deps[@]}" -newer "$lib" \( -name '*.swift' -o -name '*.[ch]' -o -name '*.a' \) | head -1) ]]; then
        return
    fi
    echo "fuzz: building $module"
    if [[ $module == CSluiceShims ]]; then build_c_module "$module"; return; fi
    swiftc "${FLAGS[@]}" -module-name "$module" -emit-module -emit-module-path "$OUT/$module.swiftmodule" \
        -emit-library -static Sources/"$module"/*.swift -o "$lib"
}

# The C shims: compiled by clang with AddressSanitizer (no coverage: nothing to fuzz in them), and a
# module map naming their umbrella header, as SwiftPM would write for its own build.
build_c_module() {
    local module=$1 source objects=()
    mkdir -p "$OUT/$module"
    printf 'module %s {\n    umbrella header "%s"\n    export *\n}\n' "$module" "$PWD/Sources/$module/include/$module.h" \
        > "$OUT/$module/module.modulemap"
    for source in Sources/"$module"/*.c; do
        objects+=("$OUT/$module/$(basename "$source" .c).o")
        clang -fsanitize=address -O1 -I "Sources/$module/include" -c "$source" -o "${objects[-1]}"
    done
    rm -f "$OUT/lib$module.a"
    ar rcs "$OUT/lib$module.a" "${objects[@]}"
}

# Links target $1 unless its binary is newer than its entry point, extra sources and libraries.
build_target() {
    local target=$1 module libs=()
    for module in ${LINKS[$target]}; do libs+=("$OUT/lib$module.a"); done
    local binary="$OUT/$target-fuzz"
    if [[ -f $binary ]] && [[ -z $(find "Fuzz/${ENTRY[$target]}" ${EXTRA[$target]:-} "${libs[@]}" -newer "$binary" | head -1) ]]; then
        return
    fi
    echo "fuzz: linking $target-fuzz"
    # ld.gold warns "Cannot export local symbol '__asan_…'" while linking; harmless.
    swiftc "${FLAGS[@]}" -module-name "${ENTRY[$target]}" "Fuzz/${ENTRY[$target]}"/*.swift ${EXTRA[$target]:-} \
        "${libs[@]}" -lsodium -lgcrypt -o "$OUT/$target-fuzz" 2> >(grep -v "Cannot export local symbol" >&2)
}

# Runs function $1 on each further argument, $JOBS at a time; fails if any run failed.
in_parallel() {
    local run=$1 pids=() failed=0 item
    shift
    for item in "$@"; do
        "$run" "$item" &
        pids+=($!)
        if (( ${#pids[@]} >= JOBS )); then wait "${pids[0]}" || failed=1; pids=("${pids[@]:1}"); fi
    done
    for item in "${pids[@]}"; do wait "$item" || failed=1; done
    return $failed
}

build_all() {
    mkdir -p "$OUT"
    local round
    for round in "${ROUNDS[@]}"; do
        # shellcheck disable=SC2086  # a round is a space-separated list of module names
        in_parallel build_module $round
    done
    in_parallel build_target "${TARGETS[@]}"
}

# Runs target $1 over corpus directory $2 (new inputs) and its seeds, with libFuzzer arguments $3…;
# without a terminal, standard input empty, every path absolute (the config and command-line targets
# work in a scratch directory of their own). The log goes to $OUT/$1.log, a crash to $OUT/crash-…;
# the executions and the time are printed, and on a failure the end of the log.
run_target() {
    local target=$1 corpus=$2; shift 2
    mkdir -p "$OUT/$corpus"
    local status=0 started=$SECONDS
    # Swift's own crash backtracer is turned off: under ASan it reports itself, not the crash.
    SWIFT_BACKTRACE=enable=no setsid "$OUT/$target-fuzz" "$OUT/$corpus" "$PWD/Fuzz/corpus/$target" -artifact_prefix="$OUT/" \
        -print_final_stats=1 "$@" </dev/null >"$OUT/$target.log" 2>&1 || status=$?
    local runs
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$OUT/$target.log")
    echo "fuzz: $target: ${runs:-?} executions in $((SECONDS - started)) s, exit status $status"
    if [[ $status -ne 0 ]]; then
        tail -n 40 "$OUT/$target.log" >&2
        return 1
    fi
}

case "${1:-}" in
build)
    build_all
    ;;
run | runs)
    limit=${2:?usage: scripts/fuzz.sh run SECONDS [TARGET…] or scripts/fuzz.sh runs COUNT [TARGET…]}
    if [[ $1 == run ]]; then bound=-max_total_time=$limit; else bound=-runs=$limit; fi
    build_all
    shift 2
    selected=("$@")
    [[ ${#selected[@]} -gt 0 ]] || selected=("${TARGETS[@]}")
    for t in "${selected[@]}"; do run_target "$t" "corpus-$t" "$bound"; done
    ;;
check)
    seconds=${2:?usage: scripts/fuzz.sh check SECONDS}
    build_all
    failed=0
    for t in "${TARGETS[@]}"; do
        # A scratch corpus, removed after: the seeds are read, nothing is written into the repository.
        rm -rf "$OUT/corpus-check-$t"
        run_target "$t" "corpus-check-$t" -max_total_time="$seconds" || failed=1
        rm -rf "$OUT/corpus-check-$t"
    done
    exit $failed
    ;;
*)
    sed -n '2,21p' "$0" >&2
    exit 2
    ;;
esac

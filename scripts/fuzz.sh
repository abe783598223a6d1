#!/usr/bin/env bash
# Builds the libFuzzer harnesses in Fuzz/ with AddressSanitizer and runs each for SECONDS (default 60): the decoders'
# seeded with the image corpus (the colour stage's with its colour-managed files); the URL validation's, the proxy
# query parser's and the imgproxy and thumbor URL parsers' with Fuzz/Seeds/<name> and the dictionary
# Fuzz/Dictionaries/<name>.dict. New inputs go to .build-fuzz/corpus/<name>; crashes to
# .build-fuzz/artifacts/. Exits non-zero when a fuzzer finds a crash, leak or timeout. FUZZERS="url png" runs some.
set -euo pipefail
cd "$(dirname "$0")/.."
# Swift's crash handler would itself trip AddressSanitizer while reporting: let libFuzzer and ASan report instead.
export SWIFT_BACKTRACE=enable=no
seconds=${SECONDS_PER_FUZZER:-60}
fuzzers=(${FUZZERS:-${FORMATS:-jpeg png gif webp avif heic jxl colour url proxy-query imgproxy-url thumbor-url}})
scratch=$PWD/.build-fuzz
testdata=${OSPREY_TESTDATA:-$PWD/../shared/testdata}
[[ -d "$testdata/images" ]] && testdata=$testdata/images

# -sanitize=fuzzer,address for Swift; C modules get coverage and ASan without libFuzzer's main.
flags=(-c release --scratch-path "$scratch" -Xswiftc -sanitize=fuzzer,address -Xcc -fsanitize=fuzzer-no-link,address
    -Xswiftc -use-ld=lld)
(cd Fuzz && swift build "${flags[@]}")
bin=$(cd Fuzz && swift build "${flags[@]}" --show-bin-path)

status=0
for format in "${fuzzers[@]}"; do
    corpus=$scratch/corpus/$format
    artifacts=$scratch/artifacts/$format
    mkdir -p "$corpus" "$artifacts"
    seeds=()
    for dir in "$testdata/valid/$format" "$testdata/invalid/$format" "Fuzz/Seeds/$format"; do
        [[ -d "$dir" ]] && seeds+=("$dir")
    done
    [[ ${#seeds[@]} -eq 0 ]] && echo "fuzz-$format: no seeds: starting from nothing"
    dictionary=()
    [[ -f "Fuzz/Dictionaries/$format.dict" ]] && dictionary=(-dict="Fuzz/Dictionaries/$format.dict")
    # Replay what earlier runs found (Fuzz/Regressions/<format>) once, under the same limits, before fuzzing.
    regressions=(Fuzz/Regressions/"$format"/*)
    if [[ -e "${regressions[0]}" ]] && ! "$bin/fuzz-$format" -rss_limit_mb=2048 -malloc_limit_mb=1024 \
        "${regressions[@]}" 2>"$scratch/regressions-$format.log"; then
        echo "fuzz-$format: a regression input fails again — see $scratch/regressions-$format.log" >&2
        status=1
        continue
    fi
    echo "fuzz-$format: ${seconds}s"
    if ! "$bin/fuzz-$format" "$corpus" "${seeds[@]}" "${dictionary[@]}" -max_total_time="$seconds" -timeout=10 \
        -rss_limit_mb=2048 -malloc_limit_mb=1024 -artifact_prefix="$artifacts/" -print_final_stats=1 \
        2>"$scratch/fuzz-$format.log"; then
        echo "fuzz-$format: FAILED — see $scratch/fuzz-$format.log and $artifacts" >&2
        tail -n 40 "$scratch/fuzz-$format.log" >&2
        status=1
    else
        grep -E "stat::number_of_executed_units|stat::peak_rss_mb|cov:" "$scratch/fuzz-$format.log" | tail -n 3
    fi
done
exit $status

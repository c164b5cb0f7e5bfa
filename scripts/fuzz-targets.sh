# The fuzz targets and what each runs with, in one place: sourced by ./test.sh (--full runs
# FUZZ_SECONDS of each), scripts/fuzz-campaign.sh (a round) and scripts/long-checks.sh.
#
#   fuzz_targets                               every target, as crate/target
#   fuzz_args TARGET ROOT NETLINK_SEEDS        prints, one per line, TARGET's seed directories
#                                              (in the checkout ROOT; NETLINK_SEEDS is where
#                                              scripts/netlink-seeds.sh wrote its seeds) and
#                                              its libFuzzer flags (starting with '-'); the
#                                              structured targets' -dict= is one of them
# shellcheck shell=bash

fuzz_targets=(sflow/decode dataplane/packets dataplane/config dataplane/pcap dataplane/netlink dataplane/api dataplane/apply)

fuzz_args() {
    local root=$2 netlink_seeds=$3
    local dicts=$root/crates/dataplane/fuzz/dicts
    case $1 in
        sflow/decode) ;;
        dataplane/packets) printf '%s\n' -max_len=30000 ;;
        dataplane/config) printf '%s\n' "$root/examples" "-dict=$dicts/config.dict" ;;
        dataplane/pcap) printf '%s\n' "$root/crates/vecflow/tests/fixtures" ;;
        dataplane/netlink) printf '%s\n' "$netlink_seeds" ;;
        dataplane/api) printf '%s\n' "$root/crates/dataplane/fuzz/seeds/api" "-dict=$dicts/api.dict" ;;
        dataplane/apply)
            printf '%s\n' "$root/crates/dataplane/fuzz/seeds/apply" "$root/examples" "-dict=$dicts/config.dict" ;;
        *) echo "no fuzz target $1 (targets: ${fuzz_targets[*]})" >&2; return 1 ;;
    esac
}

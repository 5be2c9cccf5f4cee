#!/bin/sh
# Command 2 (README; .ci/run calls it): on Debian 12 or 13, as root, from
# the source tree:
#
#   sudo ./scripts/test.sh
#
# installs the test tier on top of the user's setup (scripts/setup-test.sh
# runs scripts/setup.sh first: packages, the test VM's kernels, pmcd) and
# runs every test tier (make check: doc/testing.md). Idempotent.
set -eu
cd "$(dirname "$0")/.."
./scripts/setup-test.sh < /dev/null
exec make check

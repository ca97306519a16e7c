#!/bin/sh
# Installs Debian's chromium for the browser check of `oltpscope plot` / `reproduce`
# pages (crates/cli/tests/all/browser.rs, run with OLTPSCOPE_BROWSER_TESTS=1). Needs root.
set -eu
if command -v chromium >/dev/null 2>&1; then
    chromium --version
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y chromium
chromium --version

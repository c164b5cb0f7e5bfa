#!/usr/bin/env bash
# Builds vecflow's Debian package: target/debian/vecflow_<version>-1_amd64.deb, with
# /usr/bin/vecflow, the systemd unit (contrib/vecflow.service), an example
# /etc/vecflow/vecflow.yaml (contrib/vecflow.yaml), the man pages and the bash and zsh
# completions (both generated here by `vecflow generate` from the program's own options) and
# the README and docs. Install it, as root, with `dpkg -i target/debian/vecflow_*.deb`.
#
#   scripts/build-deb.sh        (installs cargo-deb first when it is missing)
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO_DEB_VERSION=3.8.0

if ! cargo deb --version >/dev/null 2>&1; then
    echo "build-deb: installing cargo-deb $CARGO_DEB_VERSION (cargo install)" >&2
    cargo install --locked cargo-deb --version "$CARGO_DEB_VERSION" ||
        { echo "build-deb: could not install cargo-deb $CARGO_DEB_VERSION from crates.io" >&2; exit 1; }
    # Where cargo install put it, which need not be on the PATH yet.
    export PATH="${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}/bin:$PATH"
    cargo deb --version >/dev/null 2>&1 ||
        { echo "build-deb: cargo-deb was installed but cargo deb does not run" >&2; exit 1; }
fi

cargo build --release --locked -p vecflow
assets=target/release/assets
rm -rf "$assets"
mkdir -p "$assets/man" "$assets/completions"
target/release/vecflow generate man "$assets/man"
gzip -9n "$assets"/man/*.1
target/release/vecflow generate completions bash >"$assets/completions/vecflow.bash"
target/release/vecflow generate completions zsh >"$assets/completions/_vecflow"
cargo deb -p vecflow --no-build --locked

#!/usr/bin/env bash
# Checks an installed vecflow Debian package: the binary, the man pages, the completions, the
# example configuration and the systemd unit (verified, neither enabled nor started). The
# README test runs it after the README's `dpkg -i`; run it by hand after installing too.
set -euo pipefail
fail() { echo "check-package: $*" >&2; exit 1; }
ok() { echo "check-package: $*"; }

dpkg -s vecflow >/dev/null 2>&1 || fail "the vecflow package is not installed"
version=$(dpkg-query -W -f '${Version}' vecflow)
out=$(/usr/bin/vecflow --version) || fail "/usr/bin/vecflow --version failed"
[[ $out == "vecflow ${version%%-*}" ]] || fail "/usr/bin/vecflow --version says '$out', the package is $version"
ok "$out at /usr/bin/vecflow"

for page in vecflow vecflow-run vecflow-ctl vecflow-check; do
    where=$(man -w "$page" 2>/dev/null) || fail "man -w $page finds no page"
    ok "man $page: $where"
done
man -P cat vecflow-run 2>/dev/null | grep -q -- '--socket' || fail "man vecflow-run does not describe --socket"

bash_completion=/usr/share/bash-completion/completions/vecflow
[ -f "$bash_completion" ] || fail "no bash completion at $bash_completion"
bash -c "source $bash_completion && complete -p vecflow" >/dev/null || fail "$bash_completion defines no completion for vecflow"
zsh_completion=/usr/share/zsh/vendor-completions/_vecflow
head -1 "$zsh_completion" 2>/dev/null | grep -q '^#compdef vecflow' || fail "no zsh completion at $zsh_completion"
ok "bash and zsh completions"

/usr/bin/vecflow check -c /etc/vecflow/vecflow.yaml || fail "the example /etc/vecflow/vecflow.yaml does not validate"
dpkg-query -W -f '${Conffiles}\n' vecflow | grep -q /etc/vecflow/vecflow.yaml ||
    fail "/etc/vecflow/vecflow.yaml is not a conffile"

unit=$(dpkg -L vecflow | grep '/systemd/system/vecflow\.service$') || fail "the package has no vecflow.service"
systemd-analyze verify "$unit" || fail "systemd-analyze verify $unit failed"
grep -q '^Type=notify$' "$unit" || fail "$unit is not Type=notify"
grep -q '^ExecStart=/usr/bin/vecflow run ' "$unit" || fail "$unit does not start /usr/bin/vecflow"
grep -q '^ExecReload=/usr/bin/vecflow apply ' "$unit" || fail "$unit does not reload with vecflow apply"
if ls /etc/systemd/system/*.wants/vecflow.service >/dev/null 2>&1; then
    fail "installing enabled vecflow.service; it must only be installed"
fi
ok "$unit verifies; installed, not enabled"

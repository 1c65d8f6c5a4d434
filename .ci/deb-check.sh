#!/usr/bin/env bash
# `make deb`, then the package as a user gets it: apt-get installs it with its Depends, the
# installed notify-route sends one event (to the terminal sink, which needs no desktop), its man
# page is found, systemd-analyze verifies the installed user units, lintian reports no error,
# and a purge leaves none of the package's files behind.
#
#   bash .ci/deb-check.sh        # as root, on a machine without the package installed
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "deb-check: $*" >&2; exit 1; }
# Output is read whole before it is searched: under pipefail, `cmd | grep -q` fails whenever grep
# exits on an early match while cmd is still writing (SIGPIPE), so a check passed at random.
catalog() { SYSTEMD_LOG_LEVEL=err journalctl --list-catalog 2>/dev/null || true; }
! grep -q "install ok" <<<"$(dpkg-query -W -f='${Status}' notify-route 2>/dev/null)" || fail "notify-route is installed already"

deb=$(make --no-print-directory deb | tail -1)
[ -f "$deb" ] || fail "make deb made no package ($deb)"
TMP=$(mktemp -d /tmp/notify-route-deb.XXXXXX)
trap 'rm -rf "$TMP"; [ -z "${installed:-}" ] || DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq notify-route >/dev/null 2>&1 || true' EXIT

files=$(dpkg-deb --contents "$deb" | awk '{print $6}' | sed 's|^\./|/|')
for file in /usr/bin/notify-route /usr/bin/notify-route-network /usr/share/man/man1/notify-route.1.gz \
  /usr/lib/systemd/user/notify-route.service /usr/lib/systemd/user/notify-route.socket \
  /usr/lib/systemd/user/notify-route-failure@.service /usr/lib/systemd/system/notify-route-failure@.service \
  /usr/lib/systemd/catalog/notify-route.catalog \
  /usr/share/doc/notify-route/copyright /usr/share/doc/notify-route/changelog.Debian.gz \
  /usr/share/doc/notify-route/notify-route.yaml /usr/share/doc/notify-route/REFERENCE.md \
  /usr/share/bash-completion/completions/notify-route; do
  grep -qxF "$file" <<<"$files" || fail "the package lacks $file"
done
depends=$(dpkg-deb --field "$deb" Depends)
for package in libsqlite3-0 libyaml-0-2 libnotify4 libc6; do
  grep -q "\b$package\b" <<<"$depends" || fail "Depends lacks $package: $depends"
done

command -v lintian >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends lintian >/dev/null
lintian --no-tag-display-limit "$deb" >"$TMP/lintian" 2>&1 || true
! grep -q "^E: " "$TMP/lintian" || { cat "$TMP/lintian"; fail "lintian reports errors"; }

installed=1
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "./$deb" >"$TMP/apt.log" 2>&1 ||
  { cat "$TMP/apt.log"; fail "apt-get install ./$deb failed"; }
[ "$(dpkg-query -S /usr/bin/notify-route 2>/dev/null)" = "notify-route: /usr/bin/notify-route" ] ||
  fail "/usr/bin/notify-route does not belong to the package"
# A `make install` into /usr/local (the README's quick start) comes first in PATH; the checks
# below name /usr/bin so they test the package's binary either way.
[ "$(command -v notify-route)" = /usr/bin/notify-route ] ||
  echo "deb-check: note: notify-route in PATH is $(command -v notify-route), not the package's /usr/bin/notify-route" >&2
# The default release build, as a distribution ships it: position-independent, the system's
# libraries shared, stripped.
for binary in /usr/bin/notify-route /usr/bin/notify-route-network; do
  grep -q "Type: *DYN" <<<"$(readelf -h "$binary")" || fail "$binary is not a position-independent executable"
  libraries=$(ldd "$binary") || fail "ldd $binary failed"
  for library in libsqlite3.so libyaml-0.so libstdc++.so; do
    grep -q "$library" <<<"$libraries" || fail "$binary does not load $library as a shared library"
  done
  ! grep -qE '\] \.(symtab|debug_info) ' <<<"$(readelf -SW "$binary")" || fail "$binary is not stripped"
done
version=$(/usr/bin/notify-route --version)
[ "${deb#notify-route_}" != "$deb" ] && [[ $deb == notify-route_${version//-/.}-1_* ]] || fail "--version $version, package $deb"

# One event on the embedded default config, to its terminal sink alone; a fresh HOME keeps the
# state and history of this send out of root's.
output=$(env -i PATH=/usr/bin:/bin HOME="$TMP/home" NO_COLOR=1 /usr/bin/notify-route send --sink terminal -l warning \
  "deb-check" "sent by the installed package" 2>&1) || fail "send failed: $output"
grep -q "deb-check" <<<"$output" || fail "the terminal sink printed: $output"

grep -qx /usr/share/man/man1/notify-route.1.gz <<<"$(man -wa notify-route 2>/dev/null)" || fail "man -wa notify-route: $(man -wa notify-route 2>&1)"
grep -q "^NAME" <<<"$(MANWIDTH=80 man notify-route-network 2>/dev/null)" || fail "man notify-route-network shows no page"
# As the user manager loads them; it wants a runtime directory, which root's session may not have.
mkdir -m 0700 "$TMP/run"
XDG_RUNTIME_DIR=$TMP/run systemd-analyze verify --user --man=no /usr/lib/systemd/user/notify-route.socket /usr/lib/systemd/user/notify-route.service \
  /usr/lib/systemd/user/notify-route-failure@.service || fail "systemd-analyze verify --user failed"
systemd-analyze verify --system --man=no /usr/lib/systemd/system/notify-route-failure@.service ||
  fail "systemd-analyze verify of the system failure template failed"
# systemd's trigger on /usr/lib/systemd/catalog updates the catalog (interest-noawait: dpkg may
# leave it pending past apt-get's run); any trigger still pending is processed before the check.
if ! grep -q notify-route <<<"$(catalog)"; then
  echo "deb-check: the catalog was not updated by apt-get install; pending triggers: $(dpkg --audit 2>&1 | head -3)" >&2
  dpkg --triggers-only --pending >&2 || true
  grep -q notify-route <<<"$(catalog)" ||
    { tail -5 "$TMP/apt.log" >&2; fail "the journal catalog was not updated"; }
fi

DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq notify-route >/dev/null
installed=
! grep -q "install ok" <<<"$(dpkg-query -W -f='${Status}' notify-route 2>/dev/null)" || fail "notify-route is still installed"
left=$(for file in $files; do [ ! -e "$file" ] || [ -d "$file" ] || echo "$file"; done)
[ -z "$left" ] || fail "the purge left: $left"
[ ! -e /usr/share/doc/notify-route ] || fail "the purge left /usr/share/doc/notify-route"
# A `make install` into /usr/local keeps its own catalog file, which journald reads too.
others=$(ls /etc/systemd/catalog/*notify-route* /usr/local/lib/systemd/catalog/*notify-route* 2>/dev/null || true)
if [ -z "$others" ]; then
  grep -q notify-route <<<"$(catalog)" && fail "the purge left the catalog's entries"
else
  echo "deb-check: note: the catalog check after the purge is skipped: $others defines the same entries" >&2
fi
echo "deb-check: $deb ($(du -k "$deb" | cut -f1) KiB, Installed-Size $(dpkg-deb --field "$deb" Installed-Size) KiB) installed, sent, verified and purged"
grep -E "^[WI]: " "$TMP/lintian" | sed 's/^/deb-check: lintian /' || true

#!/usr/bin/env bash
# `make install` into a DESTDIR and `make uninstall` out of it, every installed file
# checked: both binaries run, notify-route hands a network config to notify-route-network, each man page renders with `man -l`, the completion scripts
# load in bash (zsh and fish when installed), systemd-analyze verifies the units.
# The binaries as a distribution wants them, in either configuration: position-independent (ELF
# type DYN), SQLite and libyaml linked as shared libraries, stripped, each with a debug link to its
# debug file under lib/debug/.build-id. The release build alone links the Swift runtime statically
# and has no RPATH (a debug build loads the toolchain's runtime through one).
#
#   bash .ci/install-check.sh              # the debug build .ci/run has just made
#   CONFIGURATION=release bash .ci/install-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIGURATION=${CONFIGURATION:-debug}
DEST=$(mktemp -d /tmp/notify-route-install.XXXXXX)
trap 'rm -rf "$DEST" "$DEST.log" "$DEST.man-warnings"' EXIT
PREFIX=/usr
ROOT=$DEST$PREFIX
fail() { echo "install-check: $*" >&2; exit 1; }

make install CONFIGURATION="$CONFIGURATION" DESTDIR="$DEST" PREFIX="$PREFIX" NOTIFY_SEND_LINK=1 >"$DEST.log" 2>&1 ||
  { cat "$DEST.log"; fail "make install failed"; }

expected=(bin/notify-route bin/notify-route-network bin/notify-send share/man/man1/notify-route.1 share/man/man1/notify-route.send.1
  share/man/man1/notify-route.notify-send.1 share/man/man5/notify-route.yaml.5
  share/bash-completion/completions/notify-route share/zsh/site-functions/_notify-route
  share/fish/vendor_completions.d/notify-route.fish lib/systemd/user/notify-route.service
  lib/systemd/user/notify-route.socket lib/systemd/user/notify-route-failure@.service lib/systemd/system/notify-route-failure@.service
  lib/systemd/catalog/notify-route.catalog)
for file in "${expected[@]}"; do [ -e "$ROOT/$file" ] || fail "$file was not installed"; done

for name in notify-route notify-route-network; do
  binary=$ROOT/bin/$name
  grep -q "Type: *DYN" <<<"$(readelf -h "$binary")" || fail "$name is not a position-independent executable"
  libraries=$(ldd "$binary") || fail "ldd $name failed"
  for library in libsqlite3.so.0 libyaml-0.so.2; do
    grep -q "^[[:space:]]*$library => /" <<<"$libraries" || fail "$name does not load $library: $libraries"
  done
  sections=$(readelf -S -W "$binary")
  ! grep -qE '\] \.(symtab|debug_info) ' <<<"$sections" || fail "$name is not stripped"
  grep -q '\] \.gnu_debuglink ' <<<"$sections" || fail "$name has no debug link"
  id=$(readelf -n "$binary" | sed -n 's/^ *Build ID: //p')
  debug=$ROOT/lib/debug/.build-id/${id:0:2}/${id:2}.debug
  [ -n "$id" ] && [ -f "$debug" ] || fail "$name's debug file (build ID \"$id\") was not installed"
  grep -q '\] \.debug_info ' <<<"$(readelf -S -W "$debug" 2>/dev/null)" || fail "$debug holds no debug information"
  [ "$(readelf -n "$debug" 2>/dev/null | sed -n 's/^ *Build ID: //p')" = "$id" ] || fail "$debug is another build's"
  expected+=("${debug#"$ROOT/"}")
  if [ "$CONFIGURATION" = release ]; then
    ! grep -q libswiftCore <<<"$libraries" || fail "$name loads the Swift runtime as a shared library"
    ! grep -qE "RPATH|RUNPATH" <<<"$(readelf -d "$binary")" || fail "$name has a run path"
  fi
done

version=$("$ROOT/bin/notify-route" --version)
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]] || fail "--version printed \"$version\""
[ "$("$ROOT/bin/notify-send" --version)" = "notify-send (notify-route) $version" ] || fail "the notify-send link does not answer as notify-send"
[ "$("$ROOT/bin/notify-route-network" --version)" = "$version" ] || fail "notify-route-network is another version"

# notify-route links no network code; a config with a network sink runs notify-route-network,
# found beside it, and says which file is missing when it is not there (exit 69).
! grep -q AsyncHTTPClient "$ROOT/bin/notify-route" || fail "notify-route links async-http-client"
grep -q AsyncHTTPClient "$ROOT/bin/notify-route-network" || fail "notify-route-network lacks async-http-client"
printf 'sinks:\n  fleet:\n    kind: alertmanager\n    url: http://127.0.0.1:9\nroutes:\n  - to: [fleet]\n' >"$DEST/fleet.yaml"
"$ROOT/bin/notify-route" config check --config "$DEST/fleet.yaml" >/dev/null || fail "config check of an alertmanager sink failed"
mv "$ROOT/bin/notify-route-network" "$DEST/aside"
status=0; message=$("$ROOT/bin/notify-route" config check --config "$DEST/fleet.yaml" 2>&1) || status=$?
mv "$DEST/aside" "$ROOT/bin/notify-route-network"
[ "$status" = 69 ] && grep -qF "$ROOT/bin/notify-route-network" <<<"$message" ||
  fail "without notify-route-network: exit $status, \"$message\" (want 69 naming the file)"
rm "$DEST/fleet.yaml"

for page in "$ROOT"/share/man/man*/*; do
  rendered=$(MANWIDTH=80 man --warnings -l "$page" 2>"$DEST.man-warnings") || fail "man -l $page failed"
  [ ! -s "$DEST.man-warnings" ] || { cat "$DEST.man-warnings"; fail "man -l $page warned"; }
  grep -q "^NAME" <<<"$rendered" || fail "$page renders without a NAME section"
done
grep -q "78 *config error" <<<"$(MANWIDTH=80 man -l "$ROOT/share/man/man1/notify-route.1")" || fail "notify-route(1) lacks the exit codes"
grep -q "max_entries" <<<"$(MANWIDTH=80 man -l "$ROOT/share/man/man5/notify-route.yaml.5")" || fail "notify-route.yaml(5) lacks the config keys"

# bash: the script loads and completes the subcommands.
words=$(bash -c 'source "$1"; COMP_WORDS=(notify-route se); COMP_CWORD=1; COMP_LINE="notify-route se"; COMP_POINT=${#COMP_LINE}
  _notify-route notify-route se notify-route 2>/dev/null || _notify_route 2>/dev/null; printf "%s\n" "${COMPREPLY[@]}"' _ \
  "$ROOT/share/bash-completion/completions/notify-route")
grep -qx send <<<"$words" || fail "bash completion of \"notify-route se\" gave: $words"
if command -v zsh >/dev/null; then zsh -n "$ROOT/share/zsh/site-functions/_notify-route" || fail "zsh completion does not parse"; fi
if command -v fish >/dev/null; then fish -n "$ROOT/share/fish/vendor_completions.d/notify-route.fish" || fail "fish completion does not parse"; fi

grep -q "^ExecStart=$PREFIX/bin/notify-route serve$" "$ROOT/lib/systemd/user/notify-route.service" || fail "ExecStart does not name $PREFIX/bin"
for scope in user system; do
  grep -q "| $PREFIX/bin/notify-route send " "$ROOT/lib/systemd/$scope/notify-route-failure@.service" ||
    fail "the $scope failure template does not run $PREFIX/bin/notify-route"
done
# systemd-analyze checks ExecStart= exists on this machine: point it at the staged binary.
mkdir "$DEST/verify"
sed "s|^ExecStart=$PREFIX|ExecStart=$ROOT|" "$ROOT/lib/systemd/user/notify-route.service" >"$DEST/verify/notify-route.service"
sed "s|$PREFIX/bin/notify-route|$ROOT/bin/notify-route|" "$ROOT/lib/systemd/user/notify-route-failure@.service" \
  >"$DEST/verify/notify-route-failure@.service"
cp "$ROOT/lib/systemd/user/notify-route.socket" "$DEST/verify/"
systemd-analyze verify --man=no "$DEST/verify/notify-route.socket" "$DEST/verify/notify-route.service" \
  "$DEST/verify/notify-route-failure@.service" || fail "systemd-analyze verify failed"
mkdir "$DEST/verify/system"
sed "s|$PREFIX/bin/notify-route|$ROOT/bin/notify-route|" "$ROOT/lib/systemd/system/notify-route-failure@.service" \
  >"$DEST/verify/system/notify-route-failure@backup.service.service"
systemd-analyze verify --system --man=no "$DEST/verify/system/notify-route-failure@backup.service.service" ||
  fail "systemd-analyze verify of the system failure template failed"
journalctl --root="$DEST" --update-catalog 2>/dev/null || true  # the catalog parses:
grep -q "notify-route" <<<"$(SYSTEMD_LOG_LEVEL=err journalctl --root="$DEST" --list-catalog 2>/dev/null)" ||
  fail "journalctl does not read the installed catalog"

make uninstall DESTDIR="$DEST" PREFIX="$PREFIX" >/dev/null
left=$(find "$DEST" -type f ! -path "$DEST/var/*" ! -path "$DEST/verify/*")
[ -z "$left" ] || fail "make uninstall left: $left"
echo "install-check: ${#expected[@]} files installed and checked into $DEST$PREFIX, all removed by uninstall ($version)"

#!/usr/bin/env bash
# Makes notify-route_VERSION_ARCH.deb at the top of the tree from a staged `make install`
# (PREFIX=/usr, without debug files or the notify-send link, which libnotify-bin owns): what
# Debian wants on top of it (compressed man pages, copyright, changelogs, Depends, md5sums),
# then dpkg-deb. `make deb` runs it.
#
#   bash config/debian/make-deb.sh VERSION WORK    # WORK/root holds the staged install
set -euo pipefail
cd "$(dirname "$0")/../.."
version=$1 work=$(realpath "$2")
root=$work/root
here=config/debian
# Upstream version and Debian revision 1 (not a native package: CHANGELOG.md is upstream's, and
# changelog.Debian the package's); the upstream part has no '-': 0.3.0+gabc1234-dirty -> 0.3.0+gabc1234.dirty-1.
debversion=${version//-/.}-1
arch=$(dpkg --print-architecture)
doc=$root/usr/share/doc/notify-route

# Man pages gzipped (-n: no name or time, so the same tree gives the same bytes); notify-route-network
# is the same command line, so its page is notify-route's.
find "$root/usr/share/man" -type f -name '*.[0-9]' -exec gzip -9n {} +
ln -s notify-route.1.gz "$root/usr/share/man/man1/notify-route-network.1.gz"

# A completion script is sourced, never run: no #! line.
sed -i '1{/^#!/d}' "$root/usr/share/bash-completion/completions/notify-route"
install -m 0644 "$here/copyright" "$doc/copyright"
install -D -m 0644 "$here/lintian-overrides" "$root/usr/share/lintian/overrides/notify-route"
sed "s/@VERSION@/$debversion/" "$here/changelog" | gzip -9n >"$doc/changelog.Debian.gz"
gzip -9n <CHANGELOG.md >"$doc/changelog.gz" && chmod 0644 "$doc/changelog.Debian.gz" "$doc/changelog.gz"

# Depends: what the binaries link, from dpkg-shlibdeps (which wants a debian/control to read), and
# by hand what they load with dlopen: libnotify4 (the desktop sink), libsystemd0 (the journal sink
# and the daemon's journal sources).
mkdir -p "$work/debian"
printf 'Source: notify-route\n\nPackage: notify-route\nArchitecture: any\n' >"$work/debian/control"
shlibs=$(cd "$work" && dpkg-shlibdeps -O -e root/usr/bin/notify-route -e root/usr/bin/notify-route-network 2>"$work/shlibdeps.log" |
  sed -n 's/^shlibs:Depends=//p') || { cat "$work/shlibdeps.log"; exit 1; }
depends="$shlibs, libnotify4, libsystemd0"

mkdir -p "$root/DEBIAN"
(cd "$root" && find usr -type f -print0 | sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
sed -e "s/@VERSION@/$debversion/" -e "s/@ARCH@/$arch/" -e "s/@INSTALLED_SIZE@/$size/" -e "s/@DEPENDS@/$depends/" \
  "$here/control" >"$root/DEBIAN/control"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"

deb=notify-route_${debversion}_$arch.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"

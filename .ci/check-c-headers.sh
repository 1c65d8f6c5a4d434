#!/usr/bin/env bash
# The desktop and journal plugins declare the C functions they load with dlopen by hand
# (so that nothing links libnotify or libsystemd). This compiles those declarations
# beside the libraries' real headers (libnotify-dev, libsystemd-dev) and fails when a
# function type, a type, a struct layout or an enum value disagrees.
#
#   bash .ci/check-c-headers.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CC=${CC:-clang}
WORK=$(mktemp -d /tmp/notify-route-headers.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
# libnotify's pkg-config names -pthread, which it then warns about on its own.
NOTIFY_CFLAGS=$(pkg-config --cflags libnotify 2>/dev/null)
SYSTEMD_CFLAGS=$(pkg-config --cflags libsystemd)

# ---- libsystemd: the loader's type for sd_journal_sendv, in the same unit as sd-journal.h ----
cat >"$WORK/journal.c" <<'C'
#include <systemd/sd-journal.h>
#include "CSystemdJournal.c"

_Static_assert(__builtin_types_compatible_p(notify_route_sendv_function, typeof(&sd_journal_sendv)),
               "notify_route_sendv_function is not sd_journal_sendv's type");
_Static_assert(__builtin_types_compatible_p(typeof(&notify_route_journal_sendv), typeof(&sd_journal_sendv)),
               "notify_route_journal_sendv does not take what sd_journal_sendv takes");
C
"$CC" -std=gnu11 -Werror -fsyntax-only $SYSTEMD_CFLAGS \
  -I"$ROOT/Plugins/Journal/CSystemdJournal" -I"$ROOT/Plugins/Journal/CSystemdJournal/include" "$WORK/journal.c"
echo "check-c-headers: CSystemdJournal agrees with <systemd/sd-journal.h>"

# ---- libnotify, GLib, GIO ----
# CLibNotify.h declares GLib's own names (GError, GBusType, g_free, ...), so it cannot share
# a unit with <libnotify/notify.h>. Its declarations are copied into one, renamed where
# they would clash, and each is compared with the real one.
python3 - "$ROOT/Plugins/Desktop/CLibNotify/include/CLibNotify.h" >"$WORK/libnotify.c" <<'PY'
import re, sys
header = open(sys.argv[1]).read()
# Comments out: they hold parentheses and semicolons of their own.
text = re.sub(r"//[^\n]*|/\*.*?\*/", "", header, flags=re.S)
out = ["#include <libnotify/notify.h>", "#include <gio/gio.h>", "#include <stddef.h>", "#include <stdint.h>", ""]
checks = 0

def same(ours, real, what):
    global checks
    checks += 1
    out.append(f'_Static_assert(__builtin_types_compatible_p({ours}, {real}), "CLibNotify.h: {what} differs from the real one");')

for m in re.finditer(r"^#define (G_\w+) (-?\d+)$", text, re.M):
    checks += 1
    out.append(f'_Static_assert({m[1]} == {m[2]}, "CLibNotify.h: {m[1]} is not {m[2]}");')

# Plain typedefs (gchar, gsize, GVariant, ...): the same type under the real name.
for m in re.finditer(r"^typedef ([\w ]+?)\s*(\**)\s*(\w+);$", text, re.M):
    base, stars, name = m[1], m[2], m[3]
    if base.startswith("enum"): continue
    out.append(f"typedef {base} {stars}ours_{name};")
    same(f"ours_{name}", name, name)

# Function pointer typedefs (GSourceFunc, NotifyActionCallback, ...).
for m in re.finditer(r"^typedef ([^;(]+)\(\*(\w+)\)\(([^;]*)\);$", text, re.M):
    if m[2].startswith("nr_"): continue
    out.append(f"typedef {m[1]}(*ours_{m[2]})({m[3]});")
    same(f"ours_{m[2]}", m[2], m[2])

# Enumerators: each value as the real header has it.
for m in re.finditer(r"typedef enum \{(.*?)\} (\w+);", text, re.S):
    for name, value in re.findall(r"(\w+)\s*=\s*(-?\d+)", m[1]):
        checks += 1
        out.append(f'_Static_assert({name} == {value}, "CLibNotify.h: {name} is not {value} in {m[2]}");')

# Structs defined in full (GError): every field at the same offset with the same type.
for m in re.finditer(r"typedef struct (\w+) \{(.*?)\} (\w+);", text, re.S):
    tag, body, name = m[1], m[2], m[3]
    out.append(f"struct ours{tag} {{{body}}};")
    checks += 1
    out.append(f'_Static_assert(sizeof(struct ours{tag}) == sizeof({name}), "CLibNotify.h: {name} has another size");')
    for field in re.findall(r"(\w+);", body):
        checks += 1
        out.append(f'_Static_assert(offsetof(struct ours{tag}, {field}) == offsetof({name}, {field}), "CLibNotify.h: {name}.{field} moved");')
        same(f"typeof(((struct ours{tag} *)0)->{field})", f"typeof((({name} *)0)->{field})", f"{name}.{field}")

# The table the loader fills: each member has the type of the function it is resolved from.
table = re.search(r"struct nr_libnotify_api \{(.*?)\};", text, re.S)[1]
out.append(f"struct ours_api {{{table}}};")
for member in table.split(";")[:-1]:
    name = re.search(r"\(\*(\w+)\)", member)[1]
    same(f"typeof(((struct ours_api *)0)->{name})", f"typeof(&{name})", f"the table's {name}")

# The static inline stand-ins that take a real function's name: the same signature.
for m in re.finditer(r"static inline ([^;{}()]+?)\b(\w+)\(([^(){};]*)\)\s*\{", text):
    ret, name, params = m[1].strip(), m[2], " ".join(m[3].split())
    if name.startswith("nr_"): continue
    out.append(f"typedef {ret} (*ours_wrapper_{name})({params});")
    same(f"ours_wrapper_{name}", f"typeof(&{name})", f"the stand-in {name}")

if checks < 60:
    sys.exit(f"check-c-headers: only {checks} declarations found in CLibNotify.h; has its layout changed?")
print("\n".join(out))
print(f"// {checks} checks")
PY
"$CC" -std=gnu11 -Werror -fsyntax-only $NOTIFY_CFLAGS "$WORK/libnotify.c" \
  || { echo "check-c-headers: CLibNotify.h disagrees with libnotify's headers (above)" >&2; exit 1; }
echo "check-c-headers: CLibNotify.h agrees with <libnotify/notify.h> and <gio/gio.h> ($(tail -1 "$WORK/libnotify.c" | tr -dc 0-9) checks)"

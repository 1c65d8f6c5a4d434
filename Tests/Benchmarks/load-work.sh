# Sourced by serve-pairs.sh and serve-instructions.sh, from the repository's root: a work
# directory removed on exit (the serve under test, $SERVE, stopped first) and daemon-load
# built into it. $1: the work directory's name.
W=$(mktemp -d "/tmp/notify-route-$1.XXXXXX")
SERVE=
trap '[ -n "$SERVE" ] && kill "$SERVE" 2>/dev/null; rm -rf "$W"' EXIT
cc -O2 -pthread -o "$W/daemon-load" Tests/Benchmarks/daemon-load.c

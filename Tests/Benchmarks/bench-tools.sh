# Sourced by run.sh and daemon.sh before their session starts: the measuring tools that
# .ci/setup does not install (the tests need none of them), so that either script runs on a
# fresh machine. Apprise, a peer measured beside us, goes into a venv of its own.
command -v hyperfine >/dev/null || apt-get install -y hyperfine >/dev/null
command -v strace >/dev/null || apt-get install -y strace >/dev/null
command -v cc >/dev/null || apt-get install -y gcc >/dev/null
if [ ! -x /tmp/apprise-venv/bin/apprise ]; then
  { /usr/bin/python3 -m venv --system-site-packages /tmp/apprise-venv &&
    /tmp/apprise-venv/bin/pip install -q apprise; } >/tmp/notify-route-bench-apprise.log 2>&1 ||
    echo "bench-tools.sh: apprise could not be installed (see /tmp/notify-route-bench-apprise.log); its row is left out" >&2
fi

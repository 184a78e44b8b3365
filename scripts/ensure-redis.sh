#!/usr/bin/env bash
# Part of `npm test`: the rate-limit tests run against a real redis-server. If REDIS_URL is not
# set and redis-server is missing, install it from the system's packages when that is possible
# without a prompt (root, or passwordless sudo); otherwise say what to do.
set -u
[ -n "${REDIS_URL:-}" ] && exit 0
command -v redis-server >/dev/null 2>&1 && exit 0
SUDO=""
if [ "$(id -u)" != "0" ]; then
  if sudo -n true 2>/dev/null; then SUDO="sudo -n"; else SUDO="none"; fi
fi
if [ "$SUDO" != "none" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing redis-server for the rate-limit tests (apt-get)..." >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y -q redis-server </dev/null >/dev/null 2>&1 ||
    { $SUDO apt-get update -q </dev/null >/dev/null 2>&1 && $SUDO apt-get install -y -q redis-server </dev/null >/dev/null 2>&1; }
fi
command -v redis-server >/dev/null 2>&1 && exit 0
echo "warning: redis-server is not installed and could not be installed; the Redis rate-limit tests will fail. Install it (apt-get install redis-server, brew install redis) or set REDIS_URL." >&2
exit 0

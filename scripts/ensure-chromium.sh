#!/usr/bin/env bash
# Part of `npm test`: the sign-in tests drive Debian's chromium (/usr/bin/chromium) with
# playwright-core. If it is missing, install it from the system's packages when that is possible
# without a prompt (root, or passwordless sudo); otherwise say what to do.
set -u
[ -x /usr/bin/chromium ] && exit 0
SUDO=""
if [ "$(id -u)" != "0" ]; then
  if sudo -n true 2>/dev/null; then SUDO="sudo -n"; else SUDO="none"; fi
fi
if [ "$SUDO" != "none" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing chromium for the sign-in tests (apt-get)..." >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y -q chromium </dev/null >/dev/null 2>&1 ||
    { $SUDO apt-get update -q </dev/null >/dev/null 2>&1 && $SUDO apt-get install -y -q chromium </dev/null >/dev/null 2>&1; }
fi
[ -x /usr/bin/chromium ] && exit 0
echo "warning: /usr/bin/chromium is not installed and could not be installed; the browser sign-in tests will fail. Install it (apt-get install chromium)." >&2
exit 0

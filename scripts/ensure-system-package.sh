#!/usr/bin/env bash
# Part of `npm test`: ensure-system-package.sh EXECUTABLE PACKAGE WHAT. The tests start some of
# Debian's programs themselves (chromium for the browser sign-ins, nginx as the fleet's load
# balancer). If EXECUTABLE is missing, install PACKAGE from the system's packages when that is
# possible without a prompt (root, or passwordless sudo); otherwise say what to do.
set -u
executable=$1 package=$2 what=$3
[ -x "$executable" ] && exit 0
SUDO=""
if [ "$(id -u)" != "0" ]; then
  if sudo -n true 2>/dev/null; then SUDO="sudo -n"; else SUDO="none"; fi
fi
if [ "$SUDO" != "none" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing $package for $what (apt-get)..." >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y -q "$package" </dev/null >/dev/null 2>&1 ||
    { $SUDO apt-get update -q </dev/null >/dev/null 2>&1 && $SUDO apt-get install -y -q "$package" </dev/null >/dev/null 2>&1; }
fi
[ -x "$executable" ] && exit 0
echo "warning: $executable is not installed and could not be installed; $what will fail. Install it (apt-get install $package)." >&2
exit 0

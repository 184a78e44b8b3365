#!/usr/bin/env bash
# Part of `npm test`: the Redis tests run against a real redis-server, the one REDIS_URL names or
# one they start. Without REDIS_URL, redis-server is installed like the other programs the tests
# start (ensure-system-package.sh).
set -u
[ -n "${REDIS_URL:-}" ] && exit 0
command -v redis-server >/dev/null 2>&1 && exit 0
exec bash "$(dirname "${BASH_SOURCE[0]}")/ensure-system-package.sh" /usr/bin/redis-server redis-server 'the Redis tests (or set REDIS_URL)'

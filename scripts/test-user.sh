#!/usr/bin/env bash
# The ordinary (non-root) user the security tests run clio as (tests/e2e/test_key_out_of_reach.py,
# testkit/unprivileged.py): root bypasses most of what protects a real user (ptrace checks,
# /proc permissions, file modes). Idempotent and fast when everything is in place; needs root.
# Usage: scripts/test-user.sh [PYTHON]   (the interpreter the user must be able to run, e.g. the
# venv's; when it lives under a folder the user cannot enter, such as /root/.pyenv, the user is
# given search (x) permission on those folders only, with an ACL).
set -euo pipefail
user="${CLIO_TEST_USER:-cliotest}"
py="${1:-}"
if [ "$(id -u)" != 0 ]; then
    echo "test-user: not root, cannot set up $user; the tests that need it will skip" >&2
    exit 0
fi
if ! id "$user" >/dev/null 2>&1; then
    useradd --create-home --shell /bin/bash "$user"
    echo "test-user: created $user"
fi
[ -n "$py" ] || exit 0
real="$(readlink -f "$py")"
if runuser -u "$user" -- "$real" -c 'pass' 2>/dev/null; then
    exit 0
fi
if ! command -v setfacl >/dev/null 2>&1; then
    (apt-get install -y -qq acl >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq acl >/dev/null 2>&1; }) || true
fi
command -v setfacl >/dev/null 2>&1 || { echo "test-user: no setfacl; $user cannot run $real" >&2; exit 0; }
dir="$(dirname "$real")"
while [ "$dir" != "/" ]; do
    if ! runuser -u "$user" -- test -x "$dir"; then
        setfacl -m "u:$user:x" "$dir"
        echo "test-user: $user may now enter $dir (x only)"
    fi
    dir="$(dirname "$dir")"
done

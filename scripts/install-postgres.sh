#!/usr/bin/env bash
# Install PostgreSQL (Debian's `postgresql` package) and pgvector when the distribution has it,
# for the team-memory tests (tests/*/test_team_*.py start a throwaway server on 127.0.0.1 with
# initdb/pg_ctl as an unprivileged user). Idempotent and fast when the server is present.
# Needs root (or sudo) and apt.
set -euo pipefail

have_server() { compgen -G "/usr/lib/postgresql/*/bin/pg_ctl" >/dev/null; }
have_vector() { compgen -G "/usr/share/postgresql/*/extension/vector.control" >/dev/null; }

if have_server; then
    echo "postgresql already installed: $(ls -d /usr/lib/postgresql/*/bin | head -1)"
    have_vector && echo "pgvector present" || echo "pgvector not installed (ranking scores vectors in clio)"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "apt-get not found: install PostgreSQL with your package manager" >&2
    exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
        echo "need root (or sudo) to apt-get install postgresql" >&2
        exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends postgresql
# pgvector: packaged as postgresql-NN-pgvector where the distribution (or PGDG) has it
major=$(ls /usr/lib/postgresql | sort -n | tail -1)
if apt-cache show "postgresql-${major}-pgvector" >/dev/null 2>&1; then
    $SUDO apt-get install -y --no-install-recommends "postgresql-${major}-pgvector"
else
    echo "no pgvector package for PostgreSQL ${major}: ranking will score vectors in clio"
fi
# the tests run their own clusters: the packaged one need not run
have_server

#!/usr/bin/env bash
# Creates the git pack's fixture repository in DIR (created if missing; must not already be a repository):
# two commits on main, tags v0.1 and v1.0, a branch feature/login, a remote, and uncommitted changes.
# Names, dates and config are fixed, so commit ids are the same on every run. The eval cases expect them.
set -euo pipefail
dir="${1:?usage: fixture.sh DIR}"
mkdir -p "$dir"
cd "$dir"
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME="Ada Lovelace" GIT_AUTHOR_EMAIL=ada@example.com
export GIT_COMMITTER_NAME="Ada Lovelace" GIT_COMMITTER_EMAIL=ada@example.com
at() { export GIT_AUTHOR_DATE="$1" GIT_COMMITTER_DATE="$1"; }

git init -q -b main .
git config user.name "Ada Lovelace"
git config user.email ada@example.com

at "2024-03-01T10:00:00Z"
printf '# demo\n' > README.md
git add README.md
git commit -q -m "Add README"
git tag v0.1
git branch feature/login

at "2024-03-02T10:00:00Z"
printf '#!/bin/sh\necho hello\n' > hello.sh
git add hello.sh
git commit -q -m "Add greeting script" -m "Prints hello; used by the demo."
git tag -a v1.0 -m "First release"

git remote add origin https://example.com/demo.git

# uncommitted work: a modified tracked file and an untracked one
printf 'A tiny demo repository.\n' >> README.md
printf 'todo\n' > notes.txt

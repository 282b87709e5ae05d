#!/usr/bin/env bash
# The escape suite and the packs' proofs a second time as an unprivileged user (issue #24): most deployments
# do not run as root, and the layers a non-root runtime gets (Landlock, seccomp, no_new_privs, rlimits, the
# disk cap, a planted .git moved aside; and, where the host lets the user make a user namespace, the call's PID
# and mount namespaces, its own /proc and read-only mounts, #34 #40) must hold for it too. Then `hcpx doctor`,
# run as that user, is checked against what held: no test may have skipped a layer doctor calls enforced, and
# the layers that need a namespace must be called enforced exactly when the user can make one.
#
# Runs as root (CI): makes the user (`useradd`), runs the tests under `setpriv` with their own HOME and
# TMPDIR. In CI (CI=true) it makes the checkout readable to the user; elsewhere it refuses to change
# permissions and says what to do. HCPX_NONROOT_USER names another user (default hcpx-ci).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd -P)
if [ "$(id -u)" != 0 ]; then
  echo "non-root pass: the suite above already ran unprivileged (uid $(id -u))"
  exit 0
fi
user="${HCPX_NONROOT_USER:-hcpx-ci}"
if ! id "$user" >/dev/null 2>&1; then
  useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
fi
uid=$(id -u "$user")
gid=$(id -g "$user")
work=$(mktemp -d /tmp/hcpx-nonroot.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/home" "$work/tmp"
chown -R "$uid:$gid" "$work"
chmod 700 "$work"

as_user() {
  setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all --reset-env \
    env HOME="$work/home" TMPDIR="$work/tmp" PATH=/usr/local/bin:/usr/bin:/bin CI="${CI:-}" "$@"
}

# The test binary (built by the suite above; its paths to the repository and to hcpx are compiled in).
bin=$(cargo test --locked --test integration --no-run --message-format=json 2>/dev/null |
  jq -r 'select(.executable != null and .target.name == "integration") | .executable' | tail -n 1)
hcpx="$repo/target/debug/hcpx"
[ -x "$bin" ] && [ -x "$hcpx" ] || { echo "non-root pass: the test binary or hcpx is not built" >&2; exit 1; }

# The user must reach the checkout: every directory above it traversable, the checkout readable.
if ! as_user test -r "$repo/Cargo.toml" || ! as_user test -x "$bin"; then
  if [ "${CI:-}" != true ]; then
    echo "non-root pass: $user cannot read $repo; run it in CI (CI=true), or make the checkout readable (chmod o+rX on it and o+x on the directories above it)" >&2
    exit 1
  fi
  d="$repo"
  while [ "$d" != / ]; do
    chmod o+x "$d"
    d=$(dirname "$d")
  done
  chmod -R o+rX "$repo"
fi

as_user env HCP_HOME="$work/doctor-home" "$hcpx" doctor --json >"$work/doctor.json" || true
# Whether this user can make a user namespace with PID and mount namespaces and a fresh /proc in it (util-linux).
if as_user unshare --user --map-root-user --pid --mount --fork --mount-proc true 2>/dev/null; then
  userns=yes
else
  userns=no
fi
echo "non-root pass: $user can make a user namespace: $userns"
echo "non-root pass: as $user (uid $uid), hcpx doctor says:"
jq -r '.sandbox_layers[] | "  \(.name): \(.status): \(.detail)"' "$work/doctor.json"

# The escape suite (escape*.rs and the composite escapes), the egress tests of both adapters (egress.rs,
# composite_http.rs), host-bound credentials of both (secrets.rs, composite_secrets.rs), the OAuth resource
# server against an OpenID provider this user's node runs (oauth.rs), the proofs (the tickets packs' too) and
# tasks (tasks.rs: bound to their Principal, cancelled whole, with the CLI Principal not `local`), a served wrap's
# reused TMPDIR (served_tmpdir.rs: only behind the call's own PID namespace, emptied); a test that
# needs a layer this user lacks prints `skipped: layer X is …`.
status=0
as_user "$bin" escape served_tmpdir:: egress:: composite_http:: secrets:: composite_secrets:: oauth:: proof_scripts_pass_with_a_temp_home tickets:: tasks:: --test-threads=2 >"$work/tests.log" 2>&1 || status=$?
grep -E '^test .*(ok|FAILED)$|^test result|skipped: ' "$work/tests.log" || true
if [ "$status" != 0 ]; then
  echo "non-root pass: tests failed as $user" >&2
  sed -n '/^failures:/,$p' "$work/tests.log" >&2
  exit 1
fi
ran=$(grep -cE '^test .* ok$' "$work/tests.log" || true)
[ "$ran" -gt 0 ] || { echo "non-root pass: no test ran" >&2; exit 1; }

# Doctor against what held.
python3 - "$work/doctor.json" "$work/tests.log" "$userns" <<'EOF'
import json, re, sys
doctor = json.load(open(sys.argv[1]))
userns = sys.argv[3] == "yes"
status = {l["name"]: l["status"] for l in doctor["sandbox_layers"]}
skipped = set(re.findall(r"skipped: layer ([a-z-]+) is", open(sys.argv[2]).read()))
wrong = []
for name in sorted(skipped):
    if status.get(name) == "enforced":
        wrong.append(f"a test skipped layer {name}, which doctor calls enforced")
# Without CAP_SYS_ADMIN a call's namespaces are made in a user namespace of its own: held exactly where the
# user can make one. RLIMIT_NPROC counts every process of the user.
for name in ("pid-namespace", "private-proc", "read-only-mounts", "mount-namespace"):
    if userns and status.get(name) != "enforced":
        wrong.append(f"doctor calls {name} {status.get(name)} though this user can make a user namespace")
    if not userns and status.get(name) == "enforced":
        wrong.append(f"doctor calls {name} enforced for an unprivileged user who cannot make a user namespace")
if status.get("process-limit") == "enforced":
    wrong.append("doctor calls process-limit enforced for an unprivileged user (RLIMIT_NPROC is partial)")
held = sorted(n for n, s in status.items() if s == "enforced")
print(f"non-root pass: enforced and tested: {', '.join(held)}; skipped (doctor agrees they did not hold): {', '.join(sorted(skipped)) or 'none'}")
if wrong:
    print("non-root pass: doctor disagrees with what held:\n  " + "\n  ".join(wrong), file=sys.stderr)
    sys.exit(1)
EOF
echo "non-root pass: ok ($ran tests)"

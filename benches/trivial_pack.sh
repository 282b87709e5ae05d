# Sourced by the whole-process benches: `trivial_pack DIR` writes a wrap pack whose bin does nearly nothing
# (`ping` prints {"ok":true}), so a bench shows the runtime's own cost (and the sandbox's).
trivial_pack() {
  local P="$1"
  mkdir -p "$P/bin"
  cat > "$P/surface.json" <<'JSON'
{"id":"trivial","kind":"wrap","cliBin":"trivial","binding":{"mode":"public"},"wrap":{"bin":"./bin/trivial","json_flag":[]},"verbs":{"ping":{"description":"Ping.","cli":["trivial","ping"]}}}
JSON
  echo '{"surface_id":"trivial","verbs":{"ping":{"operation":"read"}}}' > "$P/policy.json"
  printf '# Trivial\n\nA trivial pack for benchmarks.\n' > "$P/HARNESS.md"
  printf '#!/bin/sh\nprintf %s\n' "'{\"ok\":true}\\n'" > "$P/bin/trivial"
  chmod +x "$P/bin/trivial"
}

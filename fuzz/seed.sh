#!/usr/bin/env bash
# Writes the seed corpus (fuzz/corpus/<target>/seed-*) from the repo's real packs and fixtures; docs/fuzz.md.
# Campaign finds are added beside the seeds by `cargo fuzz cmin`/`-merge=1` (see docs/fuzz.md), not here.
# Needs jq.
set -euo pipefail
cd "$(dirname "$0")"
root=..
packs=("$root"/packs/* "$root"/tests/fixtures/check/base)
mkdir -p corpus/{pack_load,schema_compile,template,skill,words}

for p in "${packs[@]}"; do
  name=$(basename "$p")
  # pack_load: surface \0 policy \0 HARNESS \0 evals (entries.rs split_pack_input).
  {
    cat "$p/surface.json"; printf '\0'; cat "$p/policy.json"; printf '\0'; cat "$p/HARNESS.md"
    if [ -f "$p/hcp.eval.json" ]; then printf '\0'; cat "$p/hcp.eval.json"; fi
  } > "corpus/pack_load/seed-$name"
  cp "$p/HARNESS.md" "corpus/skill/seed-$name"
  # schema_compile: every command's args schema.
  jq -c '.verbs | to_entries[] | select(.value.args) | [.key, .value.args]' "$p/surface.json" |
    while read -r row; do
      verb=$(jq -r '.[0]' <<<"$row")
      jq -c '.[1]' <<<"$row" > "corpus/schema_compile/seed-$name-$verb"
    done
  # template: every cli token after the bin, title and preview template.
  i=0
  jq -r '[.verbs[] | (.cli // [])[1:][], (.title.live // [])[], (.title.done // [])[],
          (.preview.title // empty), ((.preview.fields // {}) | .[])] | unique[]' "$p/surface.json" |
    while IFS= read -r t; do
      case "$t" in *"{{"*) printf '%s' "$t" > "corpus/template/seed-$name-$i"; i=$((i + 1)) ;; esac
    done
done
# A pack with a pass-through bootstrap, which no shipped pack has.
{
  jq -c '. + {"pass_through": {"allowedSubcommands": ["shortlog"], "maxArgv": 4, "allowedOptions": ["--summary", "--format="]}}' \
    "$root/packs/git/surface.json"
  printf '\0'
  jq -c '.verbs.shortlog = {"operation": "read"}' "$root/packs/git/policy.json"
  printf '\0'
  cat "$root/packs/git/HARNESS.md"
} > corpus/pack_load/seed-git-pass-through

# words: a schema selector byte (entries.rs WORD_SCHEMAS), then words separated by NUL bytes.
w() { local f=$1 sel=$2; shift 2; { printf "\\x$sel"; local first=1; for x in "$@"; do [ $first = 1 ] || printf '\0'; printf '%s' "$x"; first=0; done; } > "corpus/words/seed-$f"; }
w empty 00 ""
w any-kv 00 "a=b" "c:=1"
w positional 01 "HEAD" "README.md"
w named 01 "ref=main" "path=src/x"
w scalars 02 "5" "x=1.5" "b=true" "s=hello"
w negative 02 "n=-3" "x=1e3" "s=-rf"
w nullable 03 "null" "w=7" "o:=[1,2]"
w json 03 "v=2.5" "w=false" 'o:={"a":1}'
w enum 04 "short" "limit=5" "confirm=true"
w mode 04 "fmt=long" "mode=mock" "apply=false"
w pattern 05 "abc_1" "mode2=xy"
w twice 05 "q=ABC" "q=abc"

//! The CI fuzz run (docs/fuzz.md): every fuzz target's body (fuzz/entries.rs, the very file the cargo-fuzz
//! targets call) replays its committed corpus, fuzz/corpus/<target>/, then a few thousand inputs drawn from a
//! fixed seed: random bytes, and the corpus files with random bytes flipped, inserted, cut and spliced. No
//! nightly, no libFuzzer: a regression a campaign once found stays found on stable.

#[path = "../../fuzz/entries.rs"]
mod entries;

use std::fs;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use crate::helpers::repo;

/// Generated inputs per target, after the corpus.
const GENERATED: usize = 3000;

/// SplitMix64: a fixed, dependency-free sequence, the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// Bytes the pack files and words are made of, so mutations stay close to something that parses.
const DICTIONARY: [&[u8]; 14] =
    [b"{{", b"}}", b"\"", b"{", b"}", b"[", b"]", b":", b",", b"\0", b"=", b":=", b"-", b"\n## "];

/// One random change to `input`.
fn mutate(rng: &mut Rng, input: &mut Vec<u8>, corpus: &[Vec<u8>]) {
    let at = rng.below(input.len() + 1);
    match rng.below(6) {
        0 if !input.is_empty() => {
            let i = rng.below(input.len());
            input[i] ^= 1 << rng.below(8);
        }
        1 => {
            let n = rng.below(8) + 1;
            let bytes = rng.bytes(n);
            input.splice(at..at, bytes);
        }
        2 if !input.is_empty() => {
            let end = (at + rng.below(16) + 1).min(input.len());
            input.drain(at.min(end)..end);
        }
        3 => {
            let word = DICTIONARY[rng.below(DICTIONARY.len())];
            input.splice(at..at, word.iter().copied());
        }
        4 if !corpus.is_empty() => {
            let other = &corpus[rng.below(corpus.len())];
            let from = rng.below(other.len() + 1);
            let to = (from + rng.below(64)).min(other.len());
            input.splice(at..at, other[from..to].iter().copied());
        }
        _ => {
            let i = rng.below(input.len() + 1);
            input.truncate(i);
        }
    }
}

/// Runs `entry` on `input`, naming the input when it panics.
fn run(target: &str, what: &str, entry: fn(&[u8]), input: &[u8]) {
    if let Err(e) = catch_unwind(AssertUnwindSafe(|| entry(input))) {
        let msg = e
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        panic!(
            "fuzz target {target} panicked on {what}: {msg}\ninput ({} bytes): {:?}",
            input.len(),
            String::from_utf8_lossy(input)
        );
    }
}

fn smoke(target: &str, entry: fn(&[u8])) {
    let dir: PathBuf = repo().join("fuzz/corpus").join(target);
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("corpus entry").path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} holds no corpus", dir.display());
    let mut corpus = Vec::new();
    for f in &files {
        let input = fs::read(f).expect("read corpus file");
        run(target, &f.display().to_string(), entry, &input);
        corpus.push(input);
    }
    let seed = target.bytes().fold(0x6863_7078_u64, |h, b| h.rotate_left(5) ^ u64::from(b));
    let mut rng = Rng(seed);
    for i in 0..GENERATED {
        let input = if i % 4 == 0 {
            let n = rng.below(256);
            rng.bytes(n)
        } else {
            let mut input = corpus[rng.below(corpus.len())].clone();
            for _ in 0..=rng.below(8) {
                mutate(&mut rng, &mut input, &corpus);
            }
            input
        };
        run(target, &format!("generated input {i} (seed {seed:#x})"), entry, &input);
    }
}

#[test]
fn fuzz_smoke_pack_load() {
    smoke("pack_load", entries::pack_load);
}

#[test]
fn fuzz_smoke_schema_compile() {
    smoke("schema_compile", entries::schema_compile);
}

#[test]
fn fuzz_smoke_template() {
    smoke("template", entries::template);
}

#[test]
fn fuzz_smoke_skill() {
    smoke("skill", entries::skill);
}

#[test]
fn fuzz_smoke_words() {
    smoke("words", entries::words);
}

/// What the campaigns found (docs/fuzz.md), by name; the same inputs are in the corpus.
#[test]
fn fuzz_regressions() {
    // schema_compile, 2026-12-03: a one-byte `pattern` ("^") or one that starts with a multi-byte char
    // sliced the pattern out of bounds or inside a char (args/schema.rs pattern_is_closed), so compiling the pack's
    // schema panicked.
    for schema in [
        r#"{"properties":{"":{"pattern":"^"}}}"#,
        r#"{"properties":{"a":{"type":"string","pattern":"é"}}}"#,
        r#"{"properties":{"a":{"type":"string","pattern":"x"}}}"#,
    ] {
        run("schema_compile", schema, entries::schema_compile, schema.as_bytes());
    }
}

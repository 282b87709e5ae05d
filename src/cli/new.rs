//! `hcpx new KIND DIR`: scaffolds a composite or a wrap pack, then prints the commands that take it to a check.

use serde::Serialize;

use super::{LangArg, NewArgs, NewKindArg};
use crate::output::Printer;
use crate::report::{CliError, OrFail, Report, Text};
use hcpx_author::scaffold::new::{new_composite, new_wrap, GuestLang, NewPack};

/// What `build.sh` does, said once after `hcpx new composite`.
fn build_words(lang: Option<GuestLang>) -> &'static str {
    match lang {
        Some(GuestLang::Python) => "componentize-py of guest/app.py, pinned in guest/requirements.txt",
        Some(GuestLang::Js) => "componentize-js of guest/app.js, pinned in guest/package-lock.json",
        _ => "cargo build of guest/ for wasm32-wasip2",
    }
}

/// Runs `hcpx new`.
pub fn run(p: &Printer, a: &NewArgs) -> anyhow::Result<u8> {
    let made = match (a.kind, a.bin.as_deref()) {
        (NewKindArg::Composite, None) => new_composite(&a.dir, a.id.as_deref(), a.lang.into()),
        (NewKindArg::Composite, Some(bin)) => {
            return Err(CliError::new(format!(
                "--bin {bin} is for `hcpx new wrap`; a composite runs no CLI, so drop --bin"
            ))
            .into())
        }
        (NewKindArg::Wrap, Some(_)) if a.lang != LangArg::Rust => {
            return Err(CliError::new(
                "--lang is for `hcpx new composite`; a wrap runs a CLI on PATH, so drop --lang",
            )
            .into())
        }
        (NewKindArg::Wrap, Some(bin)) => new_wrap(&a.dir, bin, a.id.as_deref()),
        (NewKindArg::Wrap, None) => {
            return Err(CliError::new(
                "`hcpx new wrap` needs the CLI to wrap: pass --bin NAME, such as --bin git",
            )
            .into())
        }
    };
    Ok(p.report(&Made { ok: true, new: made.or_fail()? }))
}

/// The pack scaffolded, and the commands that take it to a check.
#[derive(Serialize)]
struct Made {
    ok: bool,
    new: NewPack,
}

impl Report for Made {
    fn text(&self, out: &Text<'_>) {
        let s = &self.new;
        out.data(&format!(
            "wrote {} pack {} to {} with command(s): {}",
            serde_json::to_value(s.kind).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default(),
            s.pack_id,
            s.dir,
            s.commands.join(", ")
        ));
        if let Some(build) = &s.build {
            out.message(&format!("next: {build}   ({}, written to adapter.wasm)", build_words(s.lang)));
        }
        for line in s.next.iter().skip(usize::from(s.build.is_some())) {
            out.message(&format!("next: {line}"));
        }
    }
}

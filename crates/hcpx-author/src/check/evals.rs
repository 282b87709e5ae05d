//! Eval rules: do the eval cases cover the commands, can each of them fail, and do they pass?

use std::collections::HashSet;

use super::{Ctx, Hits};
use crate::model::code::CONFIRM_REQUIRED;
use crate::model::diagnostic::pointer;
use crate::pack::raw::RawEvalCase;
use crate::pack::Operation;

const EVALS: &str = "hcp.eval.json";

fn cases<'a>(c: &'a Ctx) -> &'a [RawEvalCase] {
    c.pack.evals.as_ref().map_or(&[], |e| e.cases.as_slice())
}

fn case_ptr(i: usize) -> String {
    pointer(&["cases", &i.to_string()])
}

/// E001
pub fn read_without_case(c: &Ctx, h: &mut Hits) {
    if c.pack.evals.is_none() {
        return;
    }
    for (key, cmd) in &c.pack.commands {
        if cmd.policy.operation == Operation::Read && !cases(c).iter().any(|k| &k.verb == key) {
            h.push(EVALS, "/cases", format!("read `{key}` has no eval case"), format!("add a case {{\"name\": \"{key} returns JSON\", \"verb\": \"{key}\", \"args\": {{…}}, \"expect\": {{\"ok\": true, \"json\": true, \"max_ms\": 3000, \"max_tokens\": 5000}}}}"));
        }
    }
}

fn is_refusal(k: &RawEvalCase) -> bool {
    k.expect.ok == Some(false) && k.expect.error.as_deref().is_some_and(|e| e.contains(CONFIRM_REQUIRED))
}

/// E002
pub fn gated_write_without_refusal(c: &Ctx, h: &mut Hits) {
    if c.pack.evals.is_none() {
        return;
    }
    for (key, cmd) in &c.pack.commands {
        if cmd.policy.confirm && !cases(c).iter().any(|k| &k.verb == key && is_refusal(k)) {
            h.push(EVALS, "/cases", format!("confirm-gated `{key}` has no case showing it is refused without confirm"), format!("add {{\"name\": \"{key} is refused without confirm\", \"verb\": \"{key}\", \"args\": {{…}}, \"expect\": {{\"ok\": false, \"error\": \"confirm required\"}}}}"));
        }
    }
}

/// E003
pub fn expects_nothing(c: &Ctx, h: &mut Hits) {
    for (i, k) in cases(c).iter().enumerate() {
        let e = &k.expect;
        if e.ok.is_none()
            && e.json.is_none()
            && e.contains.as_ref().is_none_or(|v| v.is_empty())
            && e.error.is_none()
            && e.max_ms.is_none()
            && e.max_tokens.is_none()
        {
            h.push(EVALS, case_ptr(i) + "/expect", format!("case {:?} expects nothing, so it can never fail", k.name), "state what must hold: \"ok\", \"json\", \"contains\" or \"error\", plus \"max_ms\"/\"max_tokens\"");
        }
    }
}

/// E004
pub fn duplicate_case_name(c: &Ctx, h: &mut Hits) {
    let mut seen = HashSet::new();
    for (i, k) in cases(c).iter().enumerate() {
        if !seen.insert(k.name.as_str()) {
            h.push(
                EVALS,
                case_ptr(i) + "/name",
                format!("two cases are named {:?}; results cannot be told apart", k.name),
                "give each case a name that says what it shows",
            );
        }
    }
}

/// E005
pub fn failing_case(c: &Ctx, h: &mut Hits) {
    let Some(report) = c.evals else { return };
    for (i, r) in report.cases.iter().enumerate() {
        if !r.passed {
            h.push(EVALS, case_ptr(i), format!("eval case {:?} fails: {}", r.name, r.reason.as_deref().unwrap_or("")), format!("fix `{}` (its cli[] or the CLI), or the case if its expectation is wrong; never weaken an expectation to make it pass", r.verb));
        }
    }
}

/// E006
pub fn no_budget(c: &Ctx, h: &mut Hits) {
    for (i, k) in cases(c).iter().enumerate() {
        if k.expect.ok == Some(true) && k.expect.max_ms.is_none() && k.expect.max_tokens.is_none() {
            h.push(
                EVALS,
                case_ptr(i) + "/expect",
                format!("case {:?} sets no time or token budget", k.name),
                "add \"max_ms\" and \"max_tokens\" to the case (3000 and 5000 are good starting points)",
            );
        }
    }
}

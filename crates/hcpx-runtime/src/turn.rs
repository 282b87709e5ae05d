//! Before and after step 6 of a call of a `workspace`-mode pack: its turn at the workspace (one call at a time
//! per tenant and pack, across replicas on the PostgreSQL store), and there the workspace itself: brought to
//! the version the store keeps before the call runs, stored as the next version after it when it changed
//! (`hcpx_store::workspaces`). Every call of such a pack takes the turn, reads too, so a read sees the last
//! committed state and never a write in progress.

use std::time::Duration;

use super::job::Job;
use super::Runtime;
use crate::adapter::AdapterResult;
use crate::model::Code;
use crate::pack::WorkspaceMode;
use crate::store::turns::Turn;
use crate::store::workspaces::{CheckinError, Checkout};

/// A call's hold on its workspace: the turn, and on a store that keeps workspaces, the version it started from.
pub(super) struct Held {
    _turn: Turn,
    checkout: Option<Checkout>,
}

/// Whether `job` may write its pack's `workspace` directory, and so waits for its turn at it.
pub(super) fn takes_turn(job: &Job) -> bool {
    job.pack.workspace == WorkspaceMode::Workspace
}

impl Runtime {
    /// Before step 6, blocking: waits for the call's turn at its workspace (at most its deadline), then brings
    /// the workspace to its stored version.
    pub(super) fn workspace_turn(&self, job: &Job) -> Result<Option<Held>, Box<AdapterResult>> {
        if !takes_turn(job) {
            return Ok(None);
        }
        let wait = Duration::from_millis(job.sandbox.limits().timeout_ms);
        let (tenant, pack) = (&job.principal.tenant, &job.pack.id);
        let turn = match self.store.workspace_turn(&job.layout.workspaces, tenant, pack, wait) {
            Ok(Some(turn)) => turn,
            Ok(None) => return Err(Box::new(AdapterResult::fail(
                Code::Timeout,
                format!("timed out after {} ms waiting for another call of pack {pack} to finish with its workspace (calls that write one workspace run one at a time); try again, or raise timeout_ms in sandbox.json", wait.as_millis()),
            ))),
            Err(e) => return Err(Box::new(AdapterResult::fail(
                Code::AdapterFailed,
                format!("cannot take the workspace's turn: {e}"),
            ))),
        };
        match self.store.workspace_checkout(&job.layout.workspaces, tenant, pack) {
            Ok(checkout) => Ok(Some(Held { _turn: turn, checkout })),
            Err(e) => Err(Box::new(AdapterResult::fail(
                Code::AdapterFailed,
                format!(
                    "cannot bring pack {pack}'s workspace to its stored version: {e}; try the call again"
                ),
            ))),
        }
    }

    /// After step 6, blocking, still under the turn: stores the workspace when it changed. Refused (past
    /// `max_workspace_mb`, or holding what cannot be stored), the call fails and the stored state stays.
    pub(super) fn workspace_done(&self, job: &Job, held: Option<Held>, ran: AdapterResult) -> AdapterResult {
        let Some(Held { _turn, checkout: Some(c) }) = held else { return ran };
        let cap = job.sandbox.limits().max_workspace_mb;
        match self.store.workspace_checkin(c, cap) {
            Ok(()) => ran,
            Err(e) => {
                let code = match e {
                    CheckinError::TooLarge { .. } | CheckinError::NotStorable { .. } => Code::SandboxDenied,
                    CheckinError::Store(_) => Code::AdapterFailed,
                };
                let error = match &e {
                    CheckinError::Store(s) => format!(
                        "pack {}'s workspace was not stored: {s}; the workspace is as it was before the call",
                        job.pack.id
                    ),
                    e => format!("sandbox: {e}"),
                };
                AdapterResult { ok: false, code: Some(code), error: Some(error), result: None, ..ran }
            }
        }
    }
}

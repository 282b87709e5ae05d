//! Calls that write one workspace (one pack's `workspace` directory, of one tenant) take turns: a lock per
//! workspace, a file lock beside it on the file store and an advisory lock in the database across replicas,
//! waited for up to the call's deadline. Without it two calls read, change and write the same file at once and
//! one's write is lost (#34: ten concurrent transfers, each answered ok, moved the balance by four).

use std::path::Path;
use std::time::Duration;

use super::{Store, StoreError};

/// A call's turn at a workspace, held until dropped: what it holds (a file lock, or an advisory lock in the
/// database) is its back end's, and no caller sees which.
pub struct Turn(#[allow(dead_code)] Box<dyn Send + Sync>);

impl Turn {
    /// The turn a back end took, held as `guard` until dropped.
    pub(crate) fn held(guard: impl Send + Sync + 'static) -> Turn {
        Turn(Box::new(guard))
    }
}

/// The advisory-lock key of `tenant`'s workspace of `pack` (FNV-1a over both, a zero byte between): stable
/// across replicas and releases.
pub(crate) fn key(tenant: &str, pack: &str) -> i32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in tenant.bytes().chain(std::iter::once(0)).chain(pack.bytes()) {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h as i32
}

impl Store {
    /// Waits up to `wait` for `tenant`'s turn at the workspace of `pack` (whose directory lies in
    /// `workspaces`); `None` when another call still holds it then.
    pub fn workspace_turn(
        &self,
        workspaces: &Path,
        tenant: &str,
        pack: &str,
        wait: Duration,
    ) -> Result<Option<Turn>, StoreError> {
        self.backend.workspace_turn(workspaces, tenant, pack, wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_call_waits_for_the_first_and_another_workspace_does_not() {
        let t = tempfile::tempdir().unwrap();
        let store = Store::open(t.path()).unwrap();
        let ws = t.path().join("workspaces");
        let first = store.workspace_turn(&ws, "acme", "ledger", Duration::ZERO).unwrap();
        assert!(first.is_some());
        let busy = store.workspace_turn(&ws, "acme", "ledger", Duration::from_millis(30)).unwrap();
        assert!(busy.is_none(), "the workspace is held");
        assert!(store.workspace_turn(&ws, "acme", "other", Duration::ZERO).unwrap().is_some());
        drop(first);
        assert!(store.workspace_turn(&ws, "acme", "ledger", Duration::ZERO).unwrap().is_some());
        assert_ne!(key("acme", "ledger"), key("acmel", "edger"));
    }
}

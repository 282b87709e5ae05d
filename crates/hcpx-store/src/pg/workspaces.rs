//! Workspaces kept in the database (`hcpx_workspaces`, `crate::workspaces`): one archive per tenant and pack,
//! replaced only in a committed transaction that moves its version on by one.

use super::{db_error, Db};
use crate::workspaces::{Listed, Stored};
use crate::StoreError;

impl Db {
    /// The head of `tenant`'s workspace of `pack`: its version, digest and size, without its bytes.
    pub fn workspace_head(&self, tenant: &str, pack: &str) -> Result<Option<Stored>, StoreError> {
        let row = self.workspace_row(
            "SELECT version, digest, size FROM hcpx_workspaces WHERE tenant = $1 AND pack = $2",
            tenant,
            pack,
        )?;
        Ok(row.map(|r| Stored { version: r.get(0), digest: r.get(1), size: r.get(2) }))
    }

    /// `tenant`'s workspace of `pack` whole: its head and its archive.
    pub fn workspace_get(&self, tenant: &str, pack: &str) -> Result<Option<(Stored, Vec<u8>)>, StoreError> {
        let row = self.workspace_row(
            "SELECT version, digest, size, bytes FROM hcpx_workspaces WHERE tenant = $1 AND pack = $2",
            tenant,
            pack,
        )?;
        Ok(row.map(|r| (Stored { version: r.get(0), digest: r.get(1), size: r.get(2) }, r.get(3))))
    }

    /// The row `select` (keyed by `$1` tenant and `$2` pack) finds, if any.
    fn workspace_row(
        &self,
        select: &'static str,
        tenant: &str,
        pack: &str,
    ) -> Result<Option<tokio_postgres::Row>, StoreError> {
        let (pool, shown, tenant, pack) =
            (self.pool(), self.shown().to_string(), tenant.to_string(), pack.to_string());
        self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            c.query_opt(select, &[&tenant, &pack]).await.map_err(|e| db_error(&shown, e))
        })
    }

    /// Stores `archive` as the version after `after` (0: none stored) of `tenant`'s workspace of `pack`, in
    /// one transaction; refused when the stored version is no longer `after` (a call that did not hold the
    /// workspace's turn). The new version.
    pub fn workspace_put(
        &self,
        tenant: &str,
        pack: &str,
        after: i64,
        archive: Vec<u8>,
        digest: &str,
    ) -> Result<i64, StoreError> {
        let (pool, shown) = (self.pool(), self.shown().to_string());
        let (tenant, pack, digest) = (tenant.to_string(), pack.to_string(), digest.to_string());
        self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let size = archive.len() as i64;
            let n = c
                .execute(
                    "INSERT INTO hcpx_workspaces (tenant, pack, version, digest, size, bytes) VALUES ($1, $2, $3::bigint + 1, $4, $5, $6)
                     ON CONFLICT (tenant, pack) DO UPDATE
                       SET version = EXCLUDED.version, digest = EXCLUDED.digest, size = EXCLUDED.size,
                           bytes = EXCLUDED.bytes, updated_at = now()
                       WHERE hcpx_workspaces.version = $3::bigint",
                    &[&tenant, &pack, &after, &digest, &size, &archive],
                )
                .await
                .map_err(|e| db_error(&shown, e))?;
            if n != 1 {
                return Err(StoreError::Refused(format!(
                    "the workspace of pack {pack} (tenant {tenant}) moved past version {after} while this call ran; its changes were not kept; try the call again"
                )));
            }
            Ok(after + 1)
        })
    }

    /// The stored workspaces (of `pack`, or all), with their sizes.
    pub fn workspace_list(&self, pack: Option<&str>) -> Result<Vec<Listed>, StoreError> {
        let (pool, shown, pack) = (self.pool(), self.shown().to_string(), pack.map(str::to_string));
        self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let rows = c
                .query(
                    "SELECT tenant, pack, size FROM hcpx_workspaces WHERE $1::text IS NULL OR pack = $1 ORDER BY tenant, pack",
                    &[&pack],
                )
                .await
                .map_err(|e| db_error(&shown, e))?;
            Ok(rows.iter().map(|r| Listed { tenant: r.get(0), pack: r.get(1), size: r.get(2) }).collect())
        })
    }

    /// Forgets every tenant's workspace of `pack` (a pack replaced from another source starts empty).
    pub fn workspace_forget(&self, pack: &str) -> Result<(), StoreError> {
        let (pool, shown, pack) = (self.pool(), self.shown().to_string(), pack.to_string());
        self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            c.execute("DELETE FROM hcpx_workspaces WHERE pack = $1", &[&pack])
                .await
                .map_err(|e| db_error(&shown, e))?;
            Ok(())
        })
    }
}

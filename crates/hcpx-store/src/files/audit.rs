//! The audit chain as files (see `crate::audit`): one log of every tenant's lines, `audit.log`, rotated to
//! `audit.log.N` when full, with its head in `audit.head`, rewritten under the store lock after every append;
//! and `verify`'s walk through those files.

use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};

use super::Files;
use crate::audit::{log_files, AuditHead, AuditRecord, AuditRow, AUDIT, HEAD};
use crate::backend::{self, Backend};
use crate::chain::{conclude, no_chain, walk_texts, Break, BreakKind, Verified};
use crate::model::digest::sha256_hex;
use crate::StoreError;

/// A log that grew past this many bytes is rotated before the next append (`HCP_AUDIT_ROTATE_BYTES`).
fn rotate_bytes() -> u64 {
    std::env::var("HCP_AUDIT_ROTATE_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(crate::audit::ROTATE_BYTES)
}

impl Files {
    /// Appends `recs` as lines under the store lock, each chained to the line before, then records the new head:
    /// one write, one sync of the log and one of the head for all of them (a call's outgoing requests).
    pub(super) fn append_audit(&self, recs: &[AuditRecord]) -> Result<(), StoreError> {
        if recs.is_empty() {
            return Ok(());
        }
        let _lock = self.lock()?;
        let mut head = match self.head()? {
            Some(h) => h,
            None => self.start_chain()?,
        };
        let p = self.path(AUDIT);
        if std::fs::metadata(&p).is_ok_and(|m| m.len() >= rotate_bytes()) {
            let to = self.path(&format!("{AUDIT}.{}", head.rotated + 1));
            std::fs::rename(&p, &to).map_err(|e| StoreError::io(&p, e))?;
            head.rotated += 1;
        }
        // The head is what the next line points at. A last line that is not the head is taken in only when it
        // points at the head itself (appended before a crash kept the head from being rewritten); any other
        // last line was changed, and the new line still points at the recorded head, so `verify` shows it.
        let mut prev = match last_line(&p)? {
            Some(l) => {
                let h = sha256_hex(l.as_bytes());
                let lagged = h != head.head
                    && serde_json::from_str::<AuditRecord>(&l)
                        .is_ok_and(|r| r.prev.as_deref() == Some(&head.head));
                if lagged {
                    head.lines += 1;
                    h
                } else {
                    head.head.clone()
                }
            }
            None => head.head.clone(),
        };
        let mut text = String::new();
        for rec in recs {
            let rec = AuditRecord { prev: Some(prev), ..rec.clone() };
            let line = serde_json::to_string(&rec)
                .map_err(|e| StoreError::Corrupt { path: AUDIT.into(), reason: e.to_string() })?;
            prev = sha256_hex(line.as_bytes());
            text.push_str(&line);
            text.push('\n');
        }
        let mut f =
            OpenOptions::new().create(true).append(true).open(&p).map_err(|e| StoreError::io(&p, e))?;
        f.write_all(text.as_bytes()).map_err(|e| StoreError::io(&p, e))?;
        f.sync_data().map_err(|e| StoreError::io(&p, e))?;
        head.lines += recs.len() as u64;
        head.head = prev;
        backend::write(self, HEAD, &head, 0o600)
    }

    /// A new chain: a random genesis. A log written before chains existed is kept aside as
    /// `audit.log.unchained` (listed, never verified) so the chain covers only what it can vouch for.
    fn start_chain(&self) -> Result<AuditHead, StoreError> {
        let p = self.path(AUDIT);
        if std::fs::metadata(&p).is_ok_and(|m| m.len() > 0) {
            let aside = self.path(&format!("{AUDIT}.unchained"));
            std::fs::rename(&p, &aside).map_err(|e| StoreError::io(&p, e))?;
        }
        let seed = crate::random_bytes::<32>()?;
        let genesis = sha256_hex(&seed);
        Ok(AuditHead { head: genesis.clone(), genesis, lines: 0, rotated: 0 })
    }

    /// The recorded head, when a chain was started.
    pub(super) fn head(&self) -> Result<Option<AuditHead>, StoreError> {
        backend::read(self, HEAD)
    }

    /// Every row of the one log, kept to `tenant`'s records (and every unreadable line) when named.
    pub(super) fn rows(&self, tenant: Option<&str>) -> Result<Vec<AuditRow>, StoreError> {
        let mut rows: Vec<AuditRow> = self
            .file_lines()?
            .into_iter()
            .map(|(place, l)| match serde_json::from_str::<AuditRecord>(&l) {
                Ok(r) => AuditRow::Record(Box::new(r)),
                Err(e) => AuditRow::Unreadable { place, reason: e.to_string() },
            })
            .collect();
        if let Some(t) = tenant {
            rows.retain(|r| !matches!(r, AuditRow::Record(r) if r.tenant != t));
        }
        Ok(rows)
    }

    /// Every record of the one log, filtered to `tenant`'s when named; a damaged line is an error.
    pub(super) fn records(&self, tenant: Option<&str>) -> Result<Vec<AuditRecord>, StoreError> {
        let mut all = self
            .file_lines()?
            .into_iter()
            .map(|(place, l)| {
                serde_json::from_str(&l)
                    .map_err(|e| StoreError::Corrupt { path: place, reason: e.to_string() })
            })
            .collect::<Result<Vec<AuditRecord>, _>>()?;
        if let Some(t) = tenant {
            all.retain(|r| r.tenant == t);
        }
        Ok(all)
    }

    /// The non-empty lines of the log's files, oldest first, each with its place (`PATH line N`).
    fn file_lines(&self) -> Result<Vec<(String, String)>, StoreError> {
        let mut out = Vec::new();
        for file in log_files(&self.home, self.head()?.as_ref()) {
            let p = self.path(&file);
            let text = match std::fs::read(&p) {
                Ok(t) => String::from_utf8_lossy(&t).into_owned(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(StoreError::io(&p, e)),
            };
            for (i, l) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                out.push((format!("{} line {}", p.display(), i + 1), l.to_string()));
            }
        }
        Ok(out)
    }

    /// Walks the one chain. Every tenant is in it: a tenant none of whose calls was ever audited has nothing
    /// to vouch for, which is an answer of its own, not "intact: 0 lines".
    pub(super) fn verify(&self, tenant: Option<&str>, anchor: Option<&str>) -> Result<Verified, StoreError> {
        if let Some(t) = tenant {
            let any = self.rows(Some(t))?.iter().any(|r| matches!(r, AuditRow::Record(_)));
            if !any {
                return Err(no_chain(t));
            }
        }
        let head = self.head()?;
        let files = crate::audit::chained_files(head.as_ref());
        let mut v = Verified {
            ok: true,
            lines: 0,
            files: files.clone(),
            head: head.as_ref().map(|h| h.head.clone()),
            unrecorded: 0,
            broken: None,
        };
        let Some(head) = head else {
            let current = self.path(AUDIT);
            if std::fs::metadata(&current).is_ok_and(|m| m.len() > 0) {
                v.broken = Some(Break {
                    kind: BreakKind::NoHead,
                    file: HEAD.into(),
                    line: 0,
                    message: "audit.log has lines but audit.head, which records where its chain starts and ends, is missing: it was removed, and the log cannot be vouched for".into(),
                });
                v.ok = false;
            }
            return Ok(v);
        };
        let mut seen_anchor = anchor.is_none() || anchor == Some(head.genesis.as_str());
        v.broken = self.walk(&head, &files, anchor, &mut seen_anchor, &mut v.lines)?;
        Ok(conclude(v, &head, AUDIT, anchor, seen_anchor))
    }

    /// Checks every line of `files` against the chain; the first break, if any.
    fn walk(
        &self,
        head: &AuditHead,
        files: &[String],
        anchor: Option<&str>,
        seen_anchor: &mut bool,
        n: &mut u64,
    ) -> Result<Option<Break>, StoreError> {
        let mut texts = Vec::new();
        for file in files {
            let p = self.path(file);
            match std::fs::read_to_string(&p) {
                Ok(t) => texts.push((file.clone(), t)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && file == AUDIT => continue,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Ok(Some(Break {
                        kind: BreakKind::MissingFile,
                        file: file.clone(),
                        line: 0,
                        message: format!("{file}, a rotated part of the chain, is missing: it was removed"),
                    }));
                }
                Err(e) => return Err(StoreError::io(&p, e)),
            }
        }
        Ok(walk_texts(head, &texts, anchor, seen_anchor, n))
    }
}

/// The last line of `p` (without its newline), reading only its tail; `None` when the file is missing or empty.
fn last_line(p: &std::path::Path) -> Result<Option<String>, StoreError> {
    let mut f = match std::fs::File::open(p) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StoreError::io(p, e)),
    };
    let len = f.metadata().map_err(|e| StoreError::io(p, e))?.len();
    if len == 0 {
        return Ok(None);
    }
    // An audit line is well under 64 KiB (its fields are names, a time, two hashes and a path).
    let from = len.saturating_sub(64 * 1024);
    f.seek(SeekFrom::Start(from)).map_err(|e| StoreError::io(p, e))?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).map_err(|e| StoreError::io(p, e))?;
    let text = String::from_utf8_lossy(&buf);
    Ok(text.trim_end_matches('\n').rsplit('\n').next().map(str::to_string))
}

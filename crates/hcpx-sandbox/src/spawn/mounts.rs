//! The bind mounts of a call's own mount namespace (its pinned and protected paths, the project's `.git`): made
//! with system calls only, so the clone child and the `.git` guard both use them.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::NulInPath;

/// The bind mounts [`bind_mounts`] makes: each of `pin` on itself, each of `protect` on itself read-only, with
/// the flags of the mount it sits on.
pub(crate) fn binds(
    pin: &[std::path::PathBuf],
    protect: &[std::path::PathBuf],
) -> Result<Vec<(CString, bool, libc::c_ulong)>, NulInPath> {
    let c = |p: &Path| CString::new(p.as_os_str().as_bytes()).map_err(|_| NulInPath(p.to_path_buf()));
    pin.iter()
        .map(|p| (p, false))
        .chain(protect.iter().map(|p| (p, true)))
        .map(|(p, ro)| Ok((c(p)?, ro, mount_flags(p))))
        .collect()
}

/// The flags of the mount `path` sits on that a read-only bind remount must keep (nosuid, nodev, noexec).
fn mount_flags(path: &Path) -> libc::c_ulong {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else { return 0 };
    // SAFETY: statvfs fills a plain struct for a NUL-terminated path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated and `st` a valid out-parameter.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return 0;
    }
    let mut f = 0;
    for (st_flag, ms_flag) in [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ] {
        if st.f_flag & st_flag != 0 {
            f |= ms_flag;
        }
    }
    f
}

/// In a mount namespace of the caller's own: makes every mount private (nothing propagates back), then binds
/// each path on itself, read-only where asked, keeping the flags of the mount it sits on. System calls only, so
/// the clone child may call it. Returns false at the first failure (errno says why).
///
/// # Safety
/// The caller must be alone in a mount namespace it made (after `CLONE_NEWNS` or `unshare`).
pub(crate) unsafe fn bind_mounts(mounts: &[(CString, bool, libc::c_ulong)]) -> bool {
    // SAFETY: as the two functions ask.
    unsafe { make_private() && bind_only(mounts) }
}

/// Makes every mount of the caller's own mount namespace private: nothing done in it propagates back.
///
/// # Safety
/// The caller must be alone in a mount namespace it made.
pub(crate) unsafe fn make_private() -> bool {
    // SAFETY: mount on a NUL-terminated path; the caller's namespace is its own.
    unsafe {
        libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) == 0
    }
}

/// Binds each path on itself, read-only where asked (see [`bind_mounts`]), in a namespace already private.
///
/// # Safety
/// The caller must be alone in a mount namespace it made, with every mount private.
pub(super) unsafe fn bind_only(mounts: &[(CString, bool, libc::c_ulong)]) -> bool {
    // SAFETY: mount on NUL-terminated paths; the caller's namespace is its own.
    unsafe {
        for (p, ro, keep) in mounts {
            if libc::mount(p.as_ptr(), p.as_ptr(), std::ptr::null(), libc::MS_BIND, std::ptr::null()) != 0 {
                return false;
            }
            if *ro
                && libc::mount(
                    std::ptr::null(),
                    p.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | keep,
                    std::ptr::null(),
                ) != 0
            {
                return false;
            }
        }
    }
    true
}

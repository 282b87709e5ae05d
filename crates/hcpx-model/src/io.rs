//! How an I/O failure is worded in a message: short, lowercase, and honest about links.

/// The reason part of a message about `e` ("not found", "permission denied …").
pub fn io_reason(e: &std::io::Error) -> String {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::NotFound => "not found".into(),
        ErrorKind::PermissionDenied => "permission denied (or a link that leaves the pack)".into(),
        _ => e.to_string().to_lowercase(),
    }
}

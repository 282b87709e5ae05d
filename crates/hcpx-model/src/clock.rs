//! Wall-clock time as RFC 3339 text, for audit lines and store records.

/// Now, in UTC, as RFC 3339 with milliseconds.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

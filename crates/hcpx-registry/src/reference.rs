//! `oci://host[:port]/repo[:tag|@sha256:…]`: the one way a pack is named in a registry, parsed strictly so a
//! reference never carries a scheme, credentials or a path the registry client would read differently.

use super::DistError;

/// A parsed pack reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackRef {
    /// `host` or `host:port`.
    pub registry: String,
    /// `team/pack`: lower-case path components.
    pub repository: String,
    pub tag: Option<String>,
    /// `sha256:<64 hex>`.
    pub digest: Option<String>,
}

impl PackRef {
    /// Parses `oci://host/repo:tag`, `oci://host/repo@sha256:…` or both (`:tag@sha256:…`, the digest wins).
    pub fn parse(text: &str) -> Result<PackRef, DistError> {
        let bad = |why: &str| DistError::Reference { reference: text.to_string(), reason: why.to_string() };
        let rest = text.strip_prefix("oci://").ok_or_else(|| bad("it must start with oci://"))?;
        let (name, digest) = match rest.split_once('@') {
            Some((n, d)) => (n, Some(d.to_string())),
            None => (rest, None),
        };
        if let Some(d) = &digest {
            if !is_sha256_digest(d) {
                return Err(bad("the digest must be sha256: followed by 64 lower-case hex digits"));
            }
        }
        let (registry, path) =
            name.split_once('/').ok_or_else(|| bad("name a repository: oci://host/repo:tag"))?;
        if registry.is_empty()
            || !registry
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'))
        {
            return Err(bad("the registry must be a host name or address with an optional :port"));
        }
        let (repository, tag) = match path.rsplit_once(':') {
            Some((r, t)) if !t.contains('/') => (r, Some(t.to_string())),
            _ => (path, None),
        };
        if let Some(t) = &tag {
            let ok = !t.is_empty()
                && t.len() <= 128
                && t.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
                && !t.starts_with(['.', '-']);
            if !ok {
                return Err(bad("a tag is 1-128 letters, digits, '_', '.' or '-'"));
            }
        }
        let repo_ok = !repository.is_empty()
            && repository.len() <= 255
            && repository.split('/').all(|c| {
                !c.is_empty()
                    && c.chars().all(|ch| {
                        ch.is_ascii_lowercase() || ch.is_ascii_digit() || matches!(ch, '.' | '_' | '-')
                    })
                    && c.starts_with(|ch: char| ch.is_ascii_alphanumeric())
            });
        if !repo_ok {
            return Err(bad("the repository is lower-case path components like team/pack"));
        }
        if tag.is_none() && digest.is_none() {
            return Err(bad("name a tag or a digest: oci://host/repo:tag or oci://host/repo@sha256:…"));
        }
        Ok(PackRef { registry: registry.to_string(), repository: repository.to_string(), tag, digest })
    }

    /// `host/repo`: what signatures name and trust prefixes match.
    pub fn name(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }

    /// The same repository at `digest`.
    pub fn at_digest(&self, digest: &str) -> PackRef {
        PackRef { digest: Some(digest.to_string()), ..self.clone() }
    }

    /// The same repository at `tag`.
    pub fn at_tag(&self, tag: &str) -> PackRef {
        PackRef { tag: Some(tag.to_string()), digest: None, ..self.clone() }
    }

    /// Whether the registry is on this machine's loopback (reached over plain HTTP, as docker does).
    pub fn is_loopback(&self) -> bool {
        let host = match self.registry.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(""),
            None => self.registry.split(':').next().unwrap_or(""),
        };
        host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }

    /// The reference as oci-client reads it.
    pub(crate) fn client_ref(&self) -> oci_client::Reference {
        match (&self.tag, &self.digest) {
            (_, Some(d)) => {
                oci_client::Reference::with_digest(self.registry.clone(), self.repository.clone(), d.clone())
            }
            (Some(t), None) => {
                oci_client::Reference::with_tag(self.registry.clone(), self.repository.clone(), t.clone())
            }
            (None, None) => oci_client::Reference::with_tag(
                self.registry.clone(),
                self.repository.clone(),
                "latest".into(),
            ),
        }
    }
}

impl std::fmt::Display for PackRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "oci://{}/{}", self.registry, self.repository)?;
        if let Some(t) = &self.tag {
            write!(f, ":{t}")?;
        }
        if let Some(d) = &self.digest {
            write!(f, "@{d}")?;
        }
        Ok(())
    }
}

/// `sha256:` and 64 lower-case hex digits.
pub fn is_sha256_digest(d: &str) -> bool {
    d.strip_prefix("sha256:")
        .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn references_parse_strictly() {
        let r = PackRef::parse("oci://127.0.0.1:5000/team/ledger:1.0").unwrap();
        assert_eq!(
            (r.registry.as_str(), r.repository.as_str(), r.tag.as_deref()),
            ("127.0.0.1:5000", "team/ledger", Some("1.0"))
        );
        assert!(r.is_loopback());
        let d = format!("sha256:{}", "a".repeat(64));
        let r = PackRef::parse(&format!("oci://reg.example/ledger@{d}")).unwrap();
        assert_eq!(r.digest.as_deref(), Some(d.as_str()));
        assert!(!r.is_loopback());
        assert!(PackRef::parse("oci://localhost:5000/x:1").unwrap().is_loopback());
        assert!(PackRef::parse("oci://[::1]:5000/x:1").unwrap().is_loopback());
        for bad in [
            "127.0.0.1:5000/x:1",
            "oci://host/X:1",
            "oci://host/x",
            "oci://host/x@sha256:abc",
            "oci://host/../x:1",
            "oci://user:pw@host/x:1",
            "oci:///x:1",
            "oci://host/x:.bad",
        ] {
            assert!(PackRef::parse(bad).is_err(), "{bad} parsed");
        }
        assert_eq!(PackRef::parse("oci://h/a/b:t").unwrap().to_string(), "oci://h/a/b:t");
    }
}

//! The `wrap.agent_env` names a pack may not set: each changes what code a CLI loads or runs (a library
//! preloaded, a shell's startup file, a runtime's options, git's config, a pager), so setting one would run
//! the pack's own code inside a trusted system CLI. Refused at lint and again at run time; docs/security.md
//! lists this table.

/// One entry: a name, or a prefix when it ends with `*`, and the family it belongs to.
pub struct DeniedEnv {
    pub pattern: &'static str,
    pub family: &'static str,
}

macro_rules! denied {
    ($($family:literal: [$($p:literal),* $(,)?];)*) => {
        /// Every denied name or prefix, by family.
        pub const DENIED_ENV: &[DeniedEnv] = &[$($(DeniedEnv { pattern: $p, family: $family },)*)*];
    };
}

denied! {
    "the runtime's own": ["PATH", "HOME", "TMPDIR", "HCP_SANDBOX"];
    "the dynamic loader": ["LD_*", "DYLD_*", "GLIBC_TUNABLES", "GCONV_PATH"];
    "shells": ["BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "IFS", "PROMPT_COMMAND", "CDPATH", "BASH_FUNC_*", "ZDOTDIR"];
    "language runtimes": [
        "NODE_OPTIONS", "NODE_PATH", "NODE_REPL_EXTERNAL_MODULE", "PYTHON*", "PERL5*", "PERLLIB", "PERL_*", "RUBY*",
        "GEM_*", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH", "LUA_INIT*", "LUA_PATH*",
        "LUA_CPATH*", "TCLLIBPATH", "PHPRC", "PHP_INI_SCAN_DIR", "DOTNET_STARTUP_HOOKS",
    ];
    "git": [
        "GIT_CONFIG*", "GIT_EXEC_PATH", "GIT_SSH*", "GIT_ASKPASS", "GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_EDITOR",
        "GIT_SEQUENCE_EDITOR", "GIT_PROXY_COMMAND", "GIT_TEMPLATE_DIR", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_TRACE*",
    ];
    "pagers and editors": ["PAGER", "MANPAGER", "LESSOPEN", "LESSCLOSE", "LESSKEY*", "EDITOR", "VISUAL", "BROWSER", "SSH_ASKPASS", "SUDO_ASKPASS"];
    "trust and proxies": [
        "SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "HTTP_PROXY",
        "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
    ];
}

/// The family of a denied name, or `None` when a pack may set it.
pub fn denied_env(name: &str) -> Option<&'static str> {
    DENIED_ENV
        .iter()
        .find(|d| match d.pattern.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == d.pattern,
        })
        .map(|d| d.family)
}

#[cfg(test)]
mod tests {
    use super::denied_env;

    #[test]
    fn each_family_is_refused_and_plain_names_are_not() {
        for (name, family) in [
            ("PATH", "the runtime's own"),
            ("LD_PRELOAD", "the dynamic loader"),
            ("BASH_ENV", "shells"),
            ("BASH_FUNC_ls%%", "shells"),
            ("NODE_OPTIONS", "language runtimes"),
            ("PYTHONSTARTUP", "language runtimes"),
            ("GIT_CONFIG_COUNT", "git"),
            ("GIT_SSH_COMMAND", "git"),
            ("PAGER", "pagers and editors"),
            ("HTTPS_PROXY", "trust and proxies"),
        ] {
            assert_eq!(denied_env(name), Some(family), "{name}");
        }
        for ok in [
            "GH_TOKEN",
            "DEMO_MODE",
            "GIT_TERMINAL_PROMPT",
            "GIT_AUTHOR_NAME",
            "NO_COLOR",
            "LANG",
            "ENVIRONMENT",
            "PATHS",
        ] {
            assert_eq!(denied_env(ok), None, "{ok}");
        }
    }
}

//! The `wrap.agent_env` names a pack may set: only upper-case names that no rule below matches. Each rule is a
//! family of names common programs read as configuration, code, or a path to either (a library preloaded, a
//! shell's startup file, a runtime's options, git's or OpenSSL's config, `XDG_CONFIG_HOME`, a pager, a remote
//! shell), so setting one would run the pack's own code inside a trusted system CLI. Rules match by shape (a
//! prefix, a suffix, a `_`-separated word), not by a list of known names, so a program this table never heard
//! of is covered by what its name says (`FOO_CONFIG`, `FOO_RC`, `FOO_HOME`). Refused at lint and again at run
//! time; docs/security.md lists this table, and a test holds the two together.

/// One pattern of a family: `NAME` (exactly), `PREFIX*`, `*SUFFIX` (the name ends with it, `KUBECONFIG` and
/// `DOCKER_CONFIG` alike), `*_WORD_*` (one of the name's `_`-separated words), or `[a-z]` (any lower-case
/// letter).
pub struct DeniedEnv {
    pub pattern: &'static str,
    pub family: &'static str,
}

macro_rules! denied {
    ($($family:literal: [$($p:literal),* $(,)?];)*) => {
        /// Every denied pattern, by family.
        pub const DENIED_ENV: &[DeniedEnv] = &[$($(DeniedEnv { pattern: $p, family: $family },)*)*];
    };
}

denied! {
    "lower-case": ["[a-z]"];
    "the runtime's own": ["PATH", "HOME", "TMPDIR", "SHELL", "USER", "LOGNAME", "PWD", "OLDPWD", "HCP_*"];
    "the dynamic loader and libc": [
        "LD_*", "DYLD_*", "GLIBC_*", "MALLOC_*", "GCONV_*", "LOCPATH", "NLSPATH", "HOSTALIASES", "RES_OPTIONS",
        "LOCALDOMAIN", "TZDIR",
    ];
    "shells": [
        "BASH_*", "ZSH*", "ENV", "SHELLOPTS", "BASHOPTS", "PS1", "PS2", "PS3", "PS4", "IFS", "PROMPT_COMMAND", "CDPATH",
        "ZDOTDIR", "FPATH", "HISTFILE",
    ];
    "language runtimes and their package managers": [
        "NODE_*", "NPM_*", "YARN_*", "PYTHON*", "PIP_*", "PERL*", "RUBY*", "GEM_*", "BUNDLE_*", "JAVA*", "_JAVA_*",
        "JDK_*", "CLASSPATH", "LUA_*", "TCL*", "PHP*", "DOTNET_*", "GO*", "CARGO_*", "RUST*", "DENO_*", "BUN_*",
    ];
    "git, except who and how it asks": ["GIT_*"];
    "programs a CLI hands work to": [
        "PAGER", "MANPAGER", "EDITOR", "VISUAL", "BROWSER", "LESS*", "MORE", "MAKE*", "TAR_*", "RSYNC_*",
        "*_EDITOR_*", "*_PAGER_*", "*_ASKPASS_*", "*_CMD_*", "*_COMMAND_*", "*_PROGRAM_*", "*_PROG_*", "*_EXEC_*",
        "*_RSH_*", "*_SSH_*", "*_SHELL_*", "*_WRAPPER_*", "*_HELPER_*",
    ];
    "configuration": [
        "XDG_*", "*CONFIG", "*CONF", "*RC", "*INIT", "*_CONFIG_*", "*_CONF_*", "*_CFG_*", "*_RC_*", "*_INIT_*",
        "*_STARTUP_*", "*_PROFILE_*", "*OPTIONS", "*OPTS", "*OPT", "*FLAGS", "*_OPTIONS_*", "*_OPTS_*", "*_FLAGS_*",
        "*_ARGS_*",
    ];
    "paths to code or configuration": [
        "*PATH", "*HOME", "*DIR", "*DIRS", "*FILE", "*FILES", "*_PATH_*", "*_PATHS_*", "*_HOME_*", "*_DIR_*",
        "*_DIRS_*", "*_FILE_*", "*_FILES_*", "*_LIB_*", "*_LIBS_*", "*_LIBRARY_*", "*_PRELOAD_*", "*_MODULE_*",
        "*_MODULES_*", "*_PLUGIN_*", "*_PLUGINS_*", "*_HOOK_*", "*_HOOKS_*", "*_TEMPLATE_*", "*_INCLUDE_*",
        "*_SOCK_*", "*_SOCKET_*", "TERMINFO*", "TERMCAP",
    ];
    "trust, keys and proxies": [
        "SSL_*", "OPENSSL_*", "CURL_*", "WGET*", "GNUPG*", "GPG_*", "SSH_*", "KRB5*", "NETRC", "*_PROXY_*",
        "*_CA_*", "*_CERT_*", "*_CERTS_*", "*_BUNDLE_*", "*_KEYRING_*",
    ];
}

/// Names a rule above matches that a pack may still set: who git says made a commit, and whether it may ask
/// at a terminal (none of them is read as configuration, code or a path).
pub const ALLOWED_ENV: &[&str] = &[
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
    "GIT_TERMINAL_PROMPT",
];

/// Whether `name` matches `pattern` (see [`DeniedEnv`]).
fn matches(pattern: &str, name: &str) -> bool {
    if pattern == "[a-z]" {
        return name.chars().any(|c| c.is_ascii_lowercase());
    }
    if let Some(word) = pattern.strip_prefix("*_").and_then(|p| p.strip_suffix("_*")) {
        return name.split('_').any(|w| w == word);
    }
    match (pattern.strip_prefix('*'), pattern.strip_suffix('*')) {
        (Some(suffix), _) => name.ends_with(suffix),
        (None, Some(prefix)) => name.starts_with(prefix),
        (None, None) => name == pattern,
    }
}

/// The family of a denied name, or `None` when a pack may set it.
pub fn denied_env(name: &str) -> Option<&'static str> {
    if ALLOWED_ENV.contains(&name) {
        return None;
    }
    DENIED_ENV.iter().find(|d| matches(d.pattern, name)).map(|d| d.family)
}

#[cfg(test)]
mod tests {
    use super::denied_env;

    #[test]
    fn each_family_is_refused_and_plain_names_are_not() {
        // The review's names (#34) first, then at least one of every family and common programs' settings.
        let refused = [
            "XDG_CONFIG_HOME",
            "OPENSSL_CONF",
            "TAR_OPTIONS",
            "RSYNC_RSH",
            "MAKEFILES",
            "EXINIT",
            "http_proxy",
            "no_proxy",
            "Path",
            "PATH",
            "HCP_SANDBOX",
            "LD_PRELOAD",
            "LD_LIBRARY_PATH",
            "GLIBC_TUNABLES",
            "GCONV_PATH",
            "LOCPATH",
            "HOSTALIASES",
            "RES_OPTIONS",
            "BASH_ENV",
            "BASH_FUNC_ls%%",
            "ENV",
            "PS4",
            "ZDOTDIR",
            "NODE_OPTIONS",
            "NPM_CONFIG_USERCONFIG",
            "PYTHONSTARTUP",
            "PIP_CONFIG_FILE",
            "PERL5OPT",
            "RUBYOPT",
            "JAVA_TOOL_OPTIONS",
            "_JAVA_OPTIONS",
            "CLASSPATH",
            "GOFLAGS",
            "CARGO_HOME",
            "RUSTC_WRAPPER",
            "GIT_CONFIG_COUNT",
            "GIT_SSH_COMMAND",
            "GIT_EXEC_PATH",
            "PAGER",
            "MANPAGER",
            "LESSOPEN",
            "EDITOR",
            "MAKEFLAGS",
            "SUDO_ASKPASS",
            "DIFF_PROGRAM",
            "KUBECONFIG",
            "DOCKER_CONFIG",
            "AWS_CONFIG_FILE",
            "AWS_SHARED_CREDENTIALS_FILE",
            "WGETRC",
            "INPUTRC",
            "SCREENRC",
            "VIMINIT",
            "MYVIMRC",
            "GNUPGHOME",
            "PGSERVICEFILE",
            "PGPASSFILE",
            "SQLITE_HISTORY_FILE",
            "MANPATH",
            "TERMINFO",
            "SSL_CERT_FILE",
            "CURL_CA_BUNDLE",
            "REQUESTS_CA_BUNDLE",
            "NODE_EXTRA_CA_CERTS",
            "HTTPS_PROXY",
            "SSH_AUTH_SOCK",
            "KRB5_CONFIG",
            "GIT_PROXY_COMMAND",
        ];
        assert!(refused.len() >= 40);
        for name in refused {
            assert!(denied_env(name).is_some(), "{name} should be refused");
        }
        for ok in [
            "GH_TOKEN",
            "DEMO_MODE",
            "GIT_TERMINAL_PROMPT",
            "GIT_AUTHOR_NAME",
            "NO_COLOR",
            "LANG",
            "LC_ALL",
            "ENVIRONMENT",
            "COLUMNS",
            "AWS_REGION",
            "DEBIAN_FRONTEND",
            "TZ",
            "DATA_SOURCE",
        ] {
            assert_eq!(denied_env(ok), None, "{ok}");
        }
        assert_eq!(denied_env("XDG_CONFIG_HOME"), Some("configuration"));
        assert_eq!(denied_env("http_proxy"), Some("lower-case"));
        assert_eq!(denied_env("RSYNC_RSH"), Some("programs a CLI hands work to"));
    }
}

//! The EXAMPLES section of each subcommand's `--help` (clap `after_help`): the lines a person copies first.

pub const LINT: &str = "Examples:\n  hcpx lint ./mypack\n  hcpx lint ./mypack --json";
pub const EVAL: &str = "Examples:\n  hcpx eval ./mypack\n  hcpx eval ./mypack --timeout 30000 --json\n  hcpx eval ./mypack --project ~/src/myproject";
pub const CHECK: &str =
    "Examples:\n  hcpx check ./mypack\n  hcpx check ./mypack --probe --strict\n  hcpx check ./mypack --probe --agent\n  hcpx check ./mypack --probe --project ~/src/myproject";
pub const WRAP: &str =
    "Examples:\n  hcpx wrap sqlite3\n  hcpx wrap gh --out ./gh-pack\n  hcpx wrap findmnt --id mounts --json";
pub const INSTALL: &str = "Examples:\n  hcpx install ./mypack\n  hcpx install ./mypack-fork --replace --keep-workspace\n  hcpx install oci://ghcr.io/acme/ledger:1.0\n  hcpx install oci://127.0.0.1:5000/ledger@sha256:… --locked\n  hcpx install --locked                # every pack hcp.lock pins, all or nothing";
pub const PUBLISH: &str = "Examples:\n  hcpx publish ./ledger oci://127.0.0.1:5000/acme/ledger:1.0 --sign signing.pem\n  hcpx publish ./ledger oci://ghcr.io/acme/ledger:1.0 --min-score 95";
pub const UPDATE: &str = "Examples:\n  hcpx update ledger --tag 1.1\n  hcpx update ledger --tag 1.1 --yes";
pub const LOCK: &str = "Examples:\n  hcpx lock\n  hcpx install oci://127.0.0.1:5000/acme/ledger:1.0 --locked\n  hcpx install --locked";
pub const TRUST: &str = "Examples:\n  hcpx trust add acme signing.pem.pub --prefix ghcr.io/acme\n  hcpx trust list\n  hcpx trust remove acme";
pub const TRUST_ADD: &str = "Examples:\n  hcpx trust add acme signing.pem.pub --prefix ghcr.io/acme\n  hcpx trust add local cosign.pub --prefix 127.0.0.1:5000";
pub const TRUST_REMOVE: &str = "Examples:\n  hcpx trust remove acme";
pub const TRUST_LIST: &str = "Examples:\n  hcpx trust list\n  hcpx trust list --json";
pub const KEY: &str = "Examples:\n  hcpx key generate signing.pem";
pub const KEY_GENERATE: &str = "Examples:\n  hcpx key generate signing.pem\n  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out signing.pem";
pub const UNINSTALL: &str = "Examples:\n  hcpx uninstall ledger";
pub const ACTIVATE: &str =
    "Examples:\n  hcpx activate ledger\n  hcpx activate ledger transit\n  hcpx activate ledger --tenant acme";
pub const DEACTIVATE: &str = "Examples:\n  hcpx deactivate ledger\n  hcpx deactivate ledger --tenant acme";
pub const LIST: &str = "Examples:\n  hcpx list\n  hcpx list --json";
pub const AVAILABILITY: &str = "Examples:\n  hcpx availability ledger\n  hcpx availability hcp-cli --json";
pub const COMMANDS: &str =
    "Examples:\n  hcpx commands ledger\n  hcpx commands ledger transfer\n  hcpx commands hcp-cli --json";
pub const SKILL: &str = "Examples:\n  hcpx skill ledger\n  hcpx skill ledger --full";
pub const EXEC: &str = "Examples:\n  hcpx exec transit plan A B\n  hcpx exec ledger transfer --json -- amount=2.80 payee=demo-transit\n  hcpx exec ledger transfer -- amount=2.80 payee=demo-transit confirm=true\n  hcpx exec ledger transfer --dry-run -- amount=2.80 payee=demo-transit\n  hcpx exec sqlite tables --project ~/src/shop -- database=shop.db\n  hcpx exec hcp-cli hcp.list";
pub const TITLE: &str =
    "Examples:\n  hcpx title ledger transfer -- amount=2.80 payee=demo-transit\n  hcpx title ledger transfer --result '{\"ok\":true}' -- amount=2.80 payee=demo-transit";
pub const ALLOW: &str = "Examples:\n  hcpx allow sqlite3\n  hcpx allow jq git";
pub const DISALLOW: &str = "Examples:\n  hcpx disallow sqlite3";
pub const ALLOW_READ: &str =
    "Examples:\n  hcpx allow-read disks /sys\n  hcpx allow-read disks /sys /run/udev";
pub const DISALLOW_READ: &str = "Examples:\n  hcpx disallow-read disks /run/udev\n  hcpx disallow-read disks";
pub const TASKS: &str =
    "Examples:\n  hcpx tasks\n  hcpx tasks --after-ms 5000 --keep-ms 600000\n  HCP_STORE=postgres://hcpx@db:5432/hcpx hcpx tasks --after-ms 2000 --json";
pub const ALLOW_NETWORK: &str =
    "Examples:\n  hcpx allow-network ip netlink\n  hcpx allow-network weather inet";
pub const DISALLOW_NETWORK: &str =
    "Examples:\n  hcpx disallow-network weather\n  hcpx disallow-network ip netlink";
pub const ALLOW_HOST: &str = "Examples:\n  hcpx allow-host weather api.weather.example\n  hcpx allow-host weather '*.tiles.example' --tenant acme";
pub const DISALLOW_HOST: &str =
    "Examples:\n  hcpx disallow-host weather api.weather.example\n  hcpx disallow-host weather --tenant acme";
pub const GRANT: &str =
    "Examples:\n  hcpx grant\n  hcpx grant 'verb.exec.read:*'\n  hcpx grant verb.exec.write:ledger:transfer,refund";
pub const REVOKE: &str =
    "Examples:\n  hcpx revoke 'verb.exec.write:*'\n  hcpx revoke verb.exec.write:ledger:refund";
pub const AUDIT: &str =
    "Examples:\n  hcpx audit\n  hcpx audit --pack ledger --since 1h\n  hcpx audit --tenant acme --limit 20\n  hcpx audit --since 2026-01-31 --limit 20 --json";
pub const DOCTOR: &str = "Examples:\n  hcpx doctor\n  hcpx doctor --json";
pub const CREDENTIAL: &str = "Examples:\n  printf %s \"$TOKEN\" | hcpx credential set github token\n  hcpx credential list\n  hcpx credential allow github gh-issues";
pub const CREDENTIAL_SET: &str = "Examples:\n  printf %s \"$TOKEN\" | hcpx credential set github token\n  printf %s \"$TOKEN\" | hcpx credential set github token --principal alice --tenant acme";
pub const CREDENTIAL_RM: &str = "Examples:\n  hcpx credential rm github token\n  hcpx credential rm github";
pub const CREDENTIAL_LIST: &str =
    "Examples:\n  hcpx credential list\n  hcpx credential list --tenant acme --json";
pub const CREDENTIAL_ALLOW: &str = "Examples:\n  hcpx credential allow github gh-issues gh-prs";
pub const CREDENTIAL_DISALLOW: &str = "Examples:\n  hcpx credential disallow github gh-prs";
pub const MCP: &str = "Examples:\n  hcpx mcp\n  hcpx mcp --single-tool";
pub const SERVE: &str = "Examples:\n  hcpx serve\n  hcpx serve --listen 0.0.0.0:8420 --allow-host hcp.example.com --max-calls 16\n  HCP_STORE=postgres://hcpx@db:5432/hcpx PGPASSFILE=/etc/hcpx/pgpass hcpx serve --listen 0.0.0.0:8420";
pub const PRINCIPAL: &str = "Examples:\n  hcpx principal add alice --tenant acme --grant 'verb.exec.read:*'\n  hcpx principal list\n  hcpx principal rm alice";
pub const PRINCIPAL_ADD: &str = "Examples:\n  hcpx principal add alice --tenant acme --grant 'verb.exec.read:*'\n  hcpx principal add ops --tenant acme --operator --grant verb.exec.write:ledger:transfer\n  hcpx principal add ana --tenant acme --approver --person --grant verb.exec.write:ledger:transfer";
pub const PRINCIPAL_RM: &str = "Examples:\n  hcpx principal rm alice";
pub const PRINCIPAL_LIST: &str = "Examples:\n  hcpx principal list --json";
pub const COMPLETIONS: &str = "Examples:\n  hcpx completions bash > ~/.local/share/bash-completion/completions/hcpx\n  hcpx completions zsh > \"${fpath[1]}/_hcpx\"\n  hcpx completions fish > ~/.config/fish/completions/hcpx.fish";
pub const AUDIT_VERIFY: &str =
    "Examples:\n  hcpx audit verify\n  hcpx audit verify --json\n  hcpx audit verify --head 3f2a…   (a head you kept elsewhere)";
pub const CONNECT: &str =
    "Examples:\n  hcpx connect ledger -- provider=demo-bank\n  hcpx connect ledger --json -- provider=demo-bank\n  hcpx connect ledger --revoke";
pub const SENSE: &str = "Examples:\n  echo '{\"id\":\"i-1\"}' | hcpx sense emit demo item.changed\n  hcpx sense watch --pack demo\n  hcpx sense watch --after 41 --follow --json";
pub const SENSE_EMIT: &str = "Examples:\n  echo '{\"id\":\"i-1\"}' | hcpx sense emit demo item.changed\n  hcpx sense emit demo item.changed --json < event.json";
pub const SENSE_WATCH: &str = "Examples:\n  hcpx sense watch\n  hcpx sense watch --pack demo --json\n  hcpx sense watch --after 41 --follow --json";
pub const STORE: &str =
    "Examples:\n  HCP_STORE=postgres://hcpx@db:5432/hcpx hcpx store migrate\n  HCP_STORE=postgres://hcpx@db:5432/hcpx hcpx store import ~/.hcp";
pub const STORE_MIGRATE: &str =
    "Examples:\n  HCP_STORE=postgres://hcpx@db:5432/hcpx hcpx store migrate --json";
pub const STORE_EXPORT: &str =
    "Examples:\n  HCP_STORE=postgres://hcpx@db:5432/hcpx HCP_SEAL_KEY_FILE=/etc/hcpx/seal.key hcpx store export /tmp/hcp-export";
pub const STORE_IMPORT: &str =
    "Examples:\n  HCP_STORE=postgres://hcpx@db:5432/hcpx HCP_SEAL_KEY_FILE=/etc/hcpx/seal.key hcpx store import ~/.hcp";
pub const CREDENTIAL_ROTATE_KEY: &str =
    "Examples:\n  head -c 32 /dev/urandom > new.key && chmod 600 new.key\n  HCP_SEAL_KEY_FILE=old.key hcpx credential rotate-key --to new.key";
pub const PRINCIPAL_GRANT: &str = "Examples:\n  hcpx principal grant alice verb.exec.write:ledger:transfer";
pub const PRINCIPAL_REVOKE: &str = "Examples:\n  hcpx principal revoke alice 'verb.exec.read:*'";
pub const APPROVE: &str = "Examples:\n  hcpx approve                      (the writes waiting for a person, with their cards)\n  hcpx approve ap_5c1e0a9d3b7f2e4c6a8d0b1f";
pub const REFUSE: &str = "Examples:\n  hcpx refuse ap_5c1e0a9d3b7f2e4c6a8d0b1f";
pub const AUTH: &str = "Examples:\n  hcpx auth issuer add https://idp.example.com --audience https://hcp.example.com/mcp --tenant acme --scope 'hcp.read=verb.exec.read:*'\n  hcpx auth issuer list";
pub const AUTH_ISSUER: &str = "Examples:\n  hcpx auth issuer add https://idp.example.com --audience https://hcp.example.com/mcp --tenant acme --scope 'hcp.read=verb.exec.read:*'\n  hcpx auth issuer list --json\n  hcpx auth issuer remove https://idp.example.com";
pub const AUTH_ISSUER_ADD: &str = "Examples:\n  hcpx auth issuer add https://idp.example.com --audience https://hcp.example.com/mcp --tenant acme \\\n      --scope 'hcp.read=verb.exec.read:*' --scope hcp.write=verb.exec.write:ledger --operator-scope hcp.operator\n  hcpx auth issuer add https://login.example.com/realms/hcp --audience https://hcp.example.com/mcp \\\n      --tenant-claim org --tenants acme,globex --principal-claim client_id --scope 'hcp.read=verb.exec.read:*'";
pub const AUTH_ISSUER_LIST: &str = "Examples:\n  hcpx auth issuer list\n  hcpx auth issuer list --json";
pub const AUTH_ISSUER_REMOVE: &str = "Examples:\n  hcpx auth issuer remove https://idp.example.com";
pub const CONFIG: &str = "Examples:\n  hcpx config show\n  hcpx config set human_approval.commands '[{\"pack_id\": \"ledger\", \"verb_keys\": [\"transfer\"]}]'\n  hcpx config unset timeout_ms";
pub const CONFIG_SHOW: &str = "Examples:\n  hcpx config show\n  hcpx config show human_approval\n  HCP_STORE=postgres://hcpx@db:5432/hcpx hcpx config show --json";
pub const CONFIG_SET: &str = "Examples:\n  hcpx config set timeout_ms 30000\n  hcpx config set require full\n  hcpx config set human_approval.commands '[{\"pack_id\": \"ledger\"}]'\n  hcpx config set tasks.after_ms 5000\n  hcpx config set packs.notes.write '[\"/srv/notes\"]'";
pub const CONFIG_UNSET: &str =
    "Examples:\n  hcpx config unset timeout_ms\n  hcpx config unset human_approval";

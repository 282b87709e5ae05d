// The OpenID provider the OAuth tests (tests/integration/oauth.rs, tests/mcp/oauth.py) start on a loopback port:
// the real `oidc-provider` package, over HTTPS with the test's CA, issuing JWT access tokens for the resource a
// client names (RFC 8707) through the client credentials grant. Nothing here reaches beyond loopback.
//
//   node provider.mjs keys PREFIX   prints a fresh private key set (RS256, PS256, ES256, ES384, EdDSA; kids PREFIX-…)
//   node provider.mjs serve         serves until killed; env:
//     ISSUER     the issuer identifier (https://127.0.0.1:PORT)      PORT   the loopback port to listen on
//     KEYS       a file holding a private key set (from `keys`)       CERT, KEY   the TLS leaf and its key (PEM)
//     SKEW_SECS  optional: the provider's clock runs this many seconds off (negative: in the past), so its
//                tokens are already expired when they reach hcpx
//
// Clients (secret: `secret-<id>`): acme-rs, acme-ps, acme-es, acme-ed (tenant claim `org` = acme, access tokens
// signed RS256, PS256, ES256, EdDSA), acme-es384 (ES384), globex (org = globex, RS256). Scopes: hcp.read,
// hcp.write, hcp.operator, hcp.approve. The first line on stdout is `listening ISSUER` once it serves.

import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import https from 'node:https';

const mode = process.argv[2];

if (mode === 'keys') {
  const prefix = process.argv[3] || 'k';
  const jwk = (type, options, alg, kid) => {
    const { privateKey } = generateKeyPairSync(type, options);
    return { ...privateKey.export({ format: 'jwk' }), alg, kid: `${prefix}-${kid}`, use: 'sig' };
  };
  const keys = [
    jwk('rsa', { modulusLength: 2048 }, 'RS256', 'rs256'),
    jwk('rsa', { modulusLength: 2048 }, 'PS256', 'ps256'),
    jwk('ec', { namedCurve: 'P-256' }, 'ES256', 'es256'),
    jwk('ec', { namedCurve: 'P-384' }, 'ES384', 'es384'),
    jwk('ed25519', {}, 'EdDSA', 'ed25519'),
  ];
  process.stdout.write(`${JSON.stringify({ keys })}\n`);
  process.exit(0);
}

if (mode !== 'serve') {
  process.stderr.write('usage: node provider.mjs keys PREFIX | serve\n');
  process.exit(2);
}

const skew = Number(process.env.SKEW_SECS || '0');
if (skew) {
  const realNow = Date.now;
  Date.now = () => realNow() + skew * 1000;
}

const { default: Provider } = await import('oidc-provider');

const issuer = process.env.ISSUER;
const port = Number(process.env.PORT);
const jwks = JSON.parse(readFileSync(process.env.KEYS, 'utf8'));
const SCOPES = 'hcp.read hcp.write hcp.operator hcp.approve';

const client = (id, org, alg) => ({
  client_id: id,
  client_secret: `secret-${id}`,
  grant_types: ['client_credentials'],
  redirect_uris: [],
  response_types: [],
  token_endpoint_auth_method: 'client_secret_basic',
  scope: SCOPES,
  org,
  token_alg: alg,
});

const provider = new Provider(issuer, {
  clients: [
    client('acme-rs', 'acme', 'RS256'),
    client('acme-ps', 'acme', 'PS256'),
    client('acme-es', 'acme', 'ES256'),
    client('acme-es384', 'acme', 'ES384'),
    client('acme-ed', 'acme', 'EdDSA'),
    client('globex', 'globex', 'RS256'),
  ],
  clientAuthMethods: ['client_secret_basic', 'client_secret_post'],
  extraClientMetadata: { properties: ['org', 'token_alg'] },
  jwks,
  enabledJWA: {
    authorizationSigningAlgValues: ['RS256', 'PS256', 'ES256', 'ES384', 'EdDSA'],
    idTokenSigningAlgValues: ['RS256', 'PS256', 'ES256', 'ES384', 'EdDSA'],
  },
  scopes: SCOPES.split(' '),
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      // Any resource a client names is a JWT audience here, so a test can ask for another server's token.
      getResourceServerInfo: (ctx, resource, c) => ({
        scope: SCOPES,
        audience: resource,
        accessTokenTTL: 600,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: c.token_alg || 'RS256' } },
      }),
    },
  },
  extraTokenClaims: (ctx, token) => ({ org: ctx.oidc.client?.org }),
});

const server = https.createServer(
  { cert: readFileSync(process.env.CERT), key: readFileSync(process.env.KEY) },
  provider.callback(),
);
server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`listening ${issuer}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));

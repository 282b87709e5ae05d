// Runs scenarios of the official MCP conformance suite (@modelcontextprotocol/conformance, pinned in
// package.json) against a running `hcpx serve`'s /mcp and prints one JSON report of every check, for
// tests/integration/conformance.rs to judge.
//
// Usage: node run.mjs MCP_URL OUT_DIR PLAN_JSON   (the bearer token in HCPX_MCP_TOKEN)
//
// PLAN_JSON is [{"package", "spec_version" (or null), "scenario"}, …]; `package` names one of the suite's
// installs in node_modules (the release and the 2026-07-28 prerelease). The suite's server runner has no
// option for a token, and hcpx answers nothing without one, so the suite talks to a loopback proxy started
// here that adds `Authorization: Bearer …` to each request and passes everything else through unchanged
// (Host and Origin included, so hcpx's DNS-rebinding check sees what the suite sent). Nothing leaves loopback:
// the suite's server scenarios only reach the URL they are given.

import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const [target, outDir, planJson] = process.argv.slice(2);
const token = process.env.HCPX_MCP_TOKEN;
if (!target || !outDir || !planJson || !token) {
  console.error('usage: HCPX_MCP_TOKEN=… node run.mjs MCP_URL OUT_DIR PLAN_JSON');
  process.exit(2);
}
const plan = JSON.parse(planJson);
const upstream = new URL(target);
if (!['127.0.0.1', 'localhost', '[::1]'].includes(upstream.hostname)) {
  console.error(`run.mjs: ${target} is not a loopback URL; the suite runs against a local server only`);
  process.exit(2);
}
// One scenario never runs longer than this (the suite's own per-request timeouts are shorter).
const SCENARIO_MS = 120_000;

function packageDir(name) {
  const dir = path.join(here, 'node_modules', name);
  if (!existsSync(path.join(dir, 'package.json'))) {
    console.error(`run.mjs: ${dir} is missing; install the suite with scripts/setup.sh (npm ci in tests/conformance)`);
    process.exit(2);
  }
  return dir;
}

function startProxy() {
  const server = http.createServer((req, res) => {
    const headers = { ...req.headers, authorization: `Bearer ${token}` };
    const up = http.request(
      { host: upstream.hostname.replace(/^\[|\]$/g, ''), port: upstream.port, method: req.method, path: req.url, headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      }
    );
    up.on('error', (e) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`run.mjs proxy: ${e.message}`);
    });
    // A client that hangs up (an SSE stream it is done with) ends the upstream request too.
    res.on('close', () => up.destroy());
    req.pipe(up);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

function runScenario(cli, entry, dir) {
  const args = [cli, 'server', '--url', entry.url, '--scenario', entry.scenario, '-o', dir];
  if (entry.spec_version) args.push('--spec-version', entry.spec_version);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    const keep = (b) => {
      log = (log + b.toString()).slice(-4000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const timer = setTimeout(() => child.kill('SIGKILL'), SCENARIO_MS);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ exit: code, signal, log });
    });
  });
}

function checksIn(dir) {
  // The suite writes OUT_DIR/server-<scenario>-<time>/checks.json.
  const checks = [];
  for (const sub of existsSync(dir) ? readdirSync(dir) : []) {
    const file = path.join(dir, sub, 'checks.json');
    if (!existsSync(file)) continue;
    for (const c of JSON.parse(readFileSync(file, 'utf8'))) {
      checks.push({ id: c.id, status: c.status, error: c.errorMessage ?? null });
    }
  }
  return checks;
}

const proxy = await startProxy();
const base = `http://127.0.0.1:${proxy.address().port}${upstream.pathname}`;
const packages = {};
const runs = [];
for (const [i, entry] of plan.entries()) {
  const dir = packageDir(entry.package);
  const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
  packages[entry.package] = `${pkg.name}@${pkg.version}`;
  const out = path.join(outDir, String(i));
  mkdirSync(out, { recursive: true });
  const ran = await runScenario(path.join(dir, pkg.bin.conformance), { ...entry, url: base }, out);
  runs.push({ ...entry, exit: ran.exit, signal: ran.signal, checks: checksIn(out), log: ran.log });
}
proxy.close();
proxy.closeAllConnections();
console.log(JSON.stringify({ node: process.version, packages, runs }));

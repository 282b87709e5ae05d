#!/usr/bin/env node
// A small ledger CLI for the example pack. State is a JSON file in the working directory
// (the pack's private workspace when run through hcpx). Prints JSON with --json, text otherwise.
import { existsSync, readFileSync, writeFileSync, renameSync } from 'node:fs';

const STORE = 'ledger-store.json';
const PAYEES = ['demo-transit', 'demo-grocer'];
const argv = process.argv.slice(2);
const json = argv.includes('--json');
const words = argv.filter((a) => a !== '--json');

function out(obj, code = 0) {
  if (json) {
    process.stdout.write(JSON.stringify(obj) + '\n');
  } else {
    process.stdout.write(Object.entries(obj).map(([k, v]) => `${k}: ${typeof v === 'object' ? JSON.stringify(v) : v}`).join('\n') + '\n');
  }
  process.exit(code);
}
function fail(error, code = 1) {
  process.stderr.write(`ledger: ${error}\n`);
  out({ ok: false, error }, code);
}
function load() {
  if (!existsSync(STORE)) return null;
  return JSON.parse(readFileSync(STORE, 'utf8'));
}
function save(state) {
  writeFileSync(STORE + '.tmp', JSON.stringify(state, null, 2));
  renameSync(STORE + '.tmp', STORE);
}
function flag(name) {
  const i = words.indexOf(name);
  return i >= 0 ? words[i + 1] : undefined;
}

const [cmd, sub] = words;
switch (cmd) {
  case 'setup': {
    if (sub === 'status') out({ ok: true, setup: load() !== null });
    if (sub === 'all') {
      if (!words.includes('-y')) fail('setup all needs -y (no prompts)');
      const state = load() ?? { balance: '100.00', currency: 'EUR', provider: null, entries: [] };
      save(state);
      out({ ok: true, setup: true });
    }
    fail(`unknown setup subcommand ${sub ?? '(none)'}; use status or all -y`);
    break;
  }
  case 'connect': {
    const state = load();
    if (!state) fail('the store is not set up; run setup all -y first');
    if (!sub) fail('connect needs a provider id');
    state.provider = sub;
    save(state);
    out({ ok: true, provider: sub, linked: true });
    break;
  }
  case 'status': {
    const state = load();
    if (!state) out({ ok: true, setup: false, balance: null, currency: null, provider: null });
    out({ ok: true, setup: true, balance: state.balance, currency: state.currency, provider: state.provider });
    break;
  }
  case 'list': {
    const state = load();
    out({ ok: true, entries: state ? [...state.entries].reverse() : [] });
    break;
  }
  case 'transfer': {
    const amount = sub;
    const to = flag('--to');
    const memo = flag('--memo');
    if (!words.includes('--confirm')) fail('transfer needs --confirm');
    if (!amount || !/^\d+(\.\d{1,2})?$/.test(amount)) fail(`amount ${JSON.stringify(amount)} is not a positive number like 2.80`);
    if (!PAYEES.includes(to)) fail(`unknown payee ${JSON.stringify(to)}; saved payees: ${PAYEES.join(', ')}`);
    const state = load() ?? { balance: '100.00', currency: 'EUR', provider: null, entries: [] };
    const cents = Math.round(parseFloat(state.balance) * 100) - Math.round(parseFloat(amount) * 100);
    if (cents < 0) fail('insufficient balance');
    state.balance = (cents / 100).toFixed(2);
    const entry = { id: `e${state.entries.length + 1}`, amount, payee: to, memo: memo ?? null };
    state.entries.push(entry);
    save(state);
    out({ ok: true, paid: entry, balance: state.balance, currency: state.currency });
    break;
  }
  default:
    fail(`unknown command ${cmd ?? '(none)'}; commands: setup, connect, status, list, transfer`);
}

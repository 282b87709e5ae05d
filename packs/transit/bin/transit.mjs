#!/usr/bin/env node
// A deterministic demo transit CLI for the example pack: same arguments, same output.
const argv = process.argv.slice(2);
const json = argv.includes('--json');
const words = argv.filter((a) => a !== '--json');
const STOPS = ['A', 'B', 'Central', 'Central Park', 'Harbour', 'North Gate'];

function out(obj, code = 0) {
  process.stdout.write((json ? JSON.stringify(obj) : Object.entries(obj).map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join('\n')) + '\n');
  process.exit(code);
}
function fail(error) {
  process.stderr.write(`transit: ${error}\n`);
  out({ ok: false, error }, 1);
}
function optionOf(id) {
  const m = /^opt-(\d+)$/.exec(id ?? '');
  if (!m) fail(`option id ${JSON.stringify(id)} is not like opt-1`);
  return Number(m[1]);
}

const [cmd, a, b] = words;
switch (cmd) {
  case 'find': {
    if (!a) fail('find needs a query');
    const q = a.toLowerCase();
    out({ ok: true, verb: 'find', query: a, stops: STOPS.filter((s) => s.toLowerCase().includes(q)) });
    break;
  }
  case 'plan': {
    if (!a || !b) fail('plan needs a start and an end stop');
    out({ ok: true, verb: 'plan', from: a, to: b, optionId: 'opt-1' });
    break;
  }
  case 'show': {
    const n = optionOf(a);
    out({ ok: true, verb: 'show', optionId: a, legs: [{ line: `L${n}`, depart: '08:0' + (n % 10), arrive: '08:2' + (n % 10) }], price: '2.80', currency: 'EUR' });
    break;
  }
  case 'follow': {
    const n = optionOf(a);
    out({ ok: true, verb: 'follow', optionId: a, leg: 1, line: `L${n}`, delayMinutes: 0 });
    break;
  }
  case 'status':
    out({ ok: true, verb: 'status', lines: 4, disruptions: [] });
    break;
  default:
    fail(`unknown command ${cmd ?? '(none)'}; commands: find, plan, show, follow, status`);
}

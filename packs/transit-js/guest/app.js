// The transit pack as a JavaScript composite: the same commands and results as packs/transit/bin/transit.mjs
// and guest-adapters/transit-composite (Rust). Built to a component by ../build.sh.
const STOPS = ['A', 'B', 'Central', 'Central Park', 'Harbour', 'North Gate'];
const COMMANDS = ['find', 'plan', 'show', 'follow', 'status'];

function arg(args, name) {
  const v = args[name];
  if (typeof v !== 'string') throw `${name} is required`;
  return v;
}

function optionOf(id) {
  const m = /^opt-\+?([0-9]+)$/.exec(id);
  const n = m ? Number(m[1]) : -1;
  if (!(n >= 0 && n < 2 ** 32)) throw `option id ${JSON.stringify(id)} is not like opt-1`;
  return n;
}

function run(verb, args) {
  switch (verb) {
    case 'find': {
      const q = arg(args, 'query');
      const lower = q.toLowerCase();
      return { ok: true, verb: 'find', query: q, stops: STOPS.filter((s) => s.toLowerCase().includes(lower)) };
    }
    case 'plan':
      return { ok: true, verb: 'plan', from: arg(args, 'from'), to: arg(args, 'to'), optionId: 'opt-1' };
    case 'show': {
      const id = arg(args, 'option');
      const n = optionOf(id);
      const legs = [{ line: `L${n}`, depart: `08:0${n % 10}`, arrive: `08:2${n % 10}` }];
      return { ok: true, verb: 'show', optionId: id, legs, price: '2.80', currency: 'EUR' };
    }
    case 'follow': {
      const id = arg(args, 'option');
      const n = optionOf(id);
      return { ok: true, verb: 'follow', optionId: id, leg: 1, line: `L${n}`, delayMinutes: 0 };
    }
    case 'status':
      return { ok: true, verb: 'status', lines: 4, disruptions: [] };
    default:
      throw `unknown command ${verb}; commands: ${COMMANDS.join(', ')}`;
  }
}

export function exec(ctx, verbKey, argsJson) {
  let args;
  try {
    args = JSON.parse(argsJson);
  } catch (e) {
    throw `args are not a JSON object: ${e.message}`;
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) throw 'args are not a JSON object';
  return JSON.stringify(run(verbKey, args));
}

export function describe() {
  return [...COMMANDS];
}

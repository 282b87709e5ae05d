// The {{id}} pack's component: its commands, run in-process by hcpx under WASI with no ambient authority (no
// network, no environment, one preopen). `exec` answers a call; `describe` lists the commands, and must name every
// command of surface.json. Built to a component by ../build.sh with componentize-js (SpiderMonkey).

// The commands this component implements: `describe()` returns them.
const COMMANDS = ['greet', 'count'];

// A text argument that is present and not blank; else an `err` that names the fix. A thrown string is the
// `err` of `exec`'s result.
function text(args, name, example) {
  const value = args[name];
  if (typeof value !== 'string') throw `${name} is required; pass a value such as ${name}=${JSON.stringify(example)}`;
  if (!value.trim()) throw `${name} is blank; pass a value such as ${name}=${JSON.stringify(example)}`;
  return value;
}

export function exec(ctx, verbKey, argsJson) {
  let args;
  try {
    args = JSON.parse(argsJson);
  } catch (e) {
    throw `args are not a JSON object: ${e.message}`;
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) throw 'args are not a JSON object';
  let out;
  switch (verbKey) {
    case 'greet': {
      const name = text(args, 'name', 'Ada').trim();
      out = { name, greeting: `Hello, ${name}!` };
      break;
    }
    case 'count': {
      const phrase = text(args, 'phrase', 'two words');
      out = { phrase, characters: [...phrase].length, words: phrase.split(/\s+/).filter(Boolean).length };
      break;
    }
    default:
      throw `unknown command ${JSON.stringify(verbKey)}; this component implements ${COMMANDS.join(', ')}`;
  }
  return JSON.stringify(out);
}

export function describe() {
  return [...COMMANDS];
}

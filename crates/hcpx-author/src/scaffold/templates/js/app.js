// The {{id}} pack's component: its commands, run in-process by hcpx under WASI with no ambient authority (no
// sockets, no environment, one preopen; HTTP through hcpx to the hosts surface.json declares and the operator
// allows). `exec` answers a call; `describe` lists the commands, and must name every command of surface.json.
// Built to a component by ../build.sh with componentize-js (SpiderMonkey), whose `fetch` sends through
// wasi:http/outgoing-handler (world hcp:adapter@0.2.0, vendored in wit/ with wasi:http's packages in wit/deps/).

// The commands this component implements: `describe()` returns them.
const COMMANDS = ['greet', 'count', 'fetch'];

// The host `fetch` reaches. surface.json declares it (`hosts`); hcpx sends the request only once the operator
// allows it (`hcpx allow-host {{id}} example.com`), and answers any other host with `http-request-denied`.
const HOST = 'example.com';

// Most bytes of a page `fetch` reads.
const MAX_PAGE = 1 << 20;

// GETs https://example.com{path}: its status and how many bytes its body had.
async function get(path) {
  let response;
  try {
    response = await fetch(`https://${HOST}${path}`);
  } catch (e) {
    throw `${HOST}: ${e && e.message ? e.message : e}`;
  }
  const body = new Uint8Array(await response.arrayBuffer());
  if (body.length > MAX_PAGE) throw `${HOST}${path} is larger than ${MAX_PAGE} bytes`;
  return { status: response.status, bytes: body.length };
}

// A text argument that is present and not blank; else an `err` that names the fix. A thrown string is the
// `err` of `exec`'s result.
function text(args, name, example) {
  const value = args[name];
  if (typeof value !== 'string') throw `${name} is required; pass a value such as ${name}=${JSON.stringify(example)}`;
  if (!value.trim()) throw `${name} is blank; pass a value such as ${name}=${JSON.stringify(example)}`;
  return value;
}

// `exec` is async for `fetch`: componentize-js runs the component's event loop until its promise settles, so the
// call still returns once, with the value or the thrown string as its `err`.
export async function exec(ctx, verbKey, argsJson) {
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
    case 'fetch': {
      const path = args.path === undefined ? '/' : args.path;
      if (typeof path !== 'string' || !path.startsWith('/')) throw 'path must start with /; pass a value such as path="/"';
      const { status, bytes } = await get(path);
      out = { url: `https://${HOST}${path}`, status, bytes };
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

// A JavaScript composite that misbehaves on purpose, one way per command, for the runtime's limit tests
// (tests/integration/composite_lang.rs): an endless loop, a 1 GiB allocation, recursion past every limit, and a
// noisy answer in text for `hcpx check`'s advice.
import { log } from 'hcp:adapter/host@0.1.0';

const COMMANDS = ['spin', 'bomb', 'deep', 'cdeep', 'noisy', 'ok'];

function deeper(n) {
  return deeper(n + 1) + 1;
}

export function exec(ctx, verbKey, argsJson) {
  switch (verbKey) {
    case 'spin':
      for (;;) {}
    case 'bomb': {
      const held = new Uint8Array(1 << 30);
      held.fill(1);
      return String(held.length);
    }
    case 'deep':
      return String(deeper(0));
    case 'cdeep': {
      // Recursion through the engine's own C++ (the JSON serialiser).
      let nested = [];
      for (let i = 0; i < 1000000; i++) nested = [nested];
      return JSON.stringify(nested);
    }
    case 'noisy':
      // Logs on success and answers in text: what `hcpx check` advises against, in JavaScript's words.
      log('info', 'working');
      return 'done, in words';
    case 'ok':
      return '{"fine": true}';
    default:
      throw `unknown command ${verbKey}`;
  }
}

export function describe() {
  return [...COMMANDS];
}

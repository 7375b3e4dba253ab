'use strict';
// The JSON texts the runtime sends back of the user's own values are read here. V8 12.8 and later (Node 24, Deno 2.9)
// can read a key written with an escape as an earlier key of the same length ending in a backslash (nodejs/node#63785);
// where a probe of keys of our own finds that, a text with such a key is read token by token, each key defined.
JSON.parse('{"~noetic json probe~":[],"\\\\":0}');
const MISREADS_ESCAPED_KEYS = Object.keys(JSON.parse('{"~noetic json probe~":1,"\\"":2}'))[1] !== '"';
// A string, a punctuator, or a number or literal, after optional whitespace.
const TOKEN = /\s*("[^"\\]*(?:\\[^][^"\\]*)*"|[{}[\],:]|[^\s{}[\],:"]+)/y;

const parseJson = (text) => (MISREADS_ESCAPED_KEYS && hasEscapedKey(text) ? parseByTokens(text) : JSON.parse(text));

// Whether a string holding a backslash is followed by a colon, found by indexOf from one backslash to the next: a
// regular expression took longer than the parse.
function hasEscapedKey(text) {
  for (let slash = text.indexOf('\\'), next; slash >= 0; slash = next) {
    // Where that string ends: the next quote no backslash escapes.
    let quote = text.indexOf('"', slash + 2);
    for (next = text.indexOf('\\', slash + 2); next >= 0 && next < quote; next = text.indexOf('\\', next + 2)) {
      if (next + 1 === quote) quote = text.indexOf('"', quote + 1);
    }
    if (quote < 0) return false;
    let after = quote + 1;
    while (text.charCodeAt(after) <= 32) after++;
    if (text.charCodeAt(after) === 58) return true;
  }
  return false;
}

// JSON.parse checks the whole text first (a malformed one throws its own SyntaxError), then reads only strings,
// numbers and literals; a key's value is the token past its colon. Keys are defined, not assigned, so `__proto__` is an own property, as JSON.parse makes it.
function parseByTokens(text) {
  JSON.parse(text);
  TOKEN.lastIndex = 0;
  const next = () => TOKEN.exec(text)[1];
  const read = (token) => {
    if (token !== '{' && token !== '[') return JSON.parse(token);
    const [value, end] = token === '{' ? [{}, '}'] : [[], ']'];
    for (let t = next(); t !== end; t = next()) {
      if (t === ',') t = next();
      if (end === ']') value.push(read(t));
      else Object.defineProperty(value, JSON.parse(t), { value: read((next(), next())), writable: true, enumerable: true, configurable: true });
    }
    return value;
  };
  return read(next());
}

module.exports = { parseJson, parseByTokens, hasEscapedKey, MISREADS_ESCAPED_KEYS };

'use strict';
// Random (version 4) UUIDs, the ids of messages made here (createMessage, a turn's input).
//
// Why not crypto.randomUUID under Node: it builds each id from twenty string concatenations, about 530 bytes of
// short-lived strings an id, and a recall hook typically makes one through createMessage every turn (DECISIONS
// S26). Here the hex is written into one buffer and read out as a single flat string, from the same kind of pooled
// cryptographic randomness. Bun's randomUUID is native and cheaper than this, so Bun keeps it.
const { randomFillSync, randomUUID } = require('node:crypto');

const HEX = Buffer.from('0123456789abcdef', 'latin1');
// Where each random byte's two hex digits go in `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`.
const AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
const pool = new Uint8Array(16 * 128);
let used = pool.length;
const text = Buffer.from('00000000-0000-4000-8000-000000000000', 'latin1');

function pooledUuid() {
  if (used === pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  for (let i = 0; i < 16; i++) {
    let byte = pool[used + i];
    // The version (4) and the variant (10xx), as RFC 9562 lays them out.
    if (i === 6) byte = (byte & 0x0f) | 0x40;
    else if (i === 8) byte = (byte & 0x3f) | 0x80;
    text[AT[i]] = HEX[byte >> 4];
    text[AT[i] + 1] = HEX[byte & 15];
  }
  used += 16;
  return text.toString('latin1', 0, 36);
}

const randomId = typeof Bun === 'undefined' ? pooledUuid : randomUUID;

module.exports = { randomId, pooledUuid };

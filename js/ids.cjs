'use strict';
// Version 4 UUIDs written into one buffer: Node's randomUUID makes ~530 bytes of short strings an id (DECISIONS S26).
// Bun's randomUUID is native and cheaper than this, so Bun keeps it.
const { randomFillSync, randomUUID } = require('node:crypto');

const HEX = Buffer.from('0123456789abcdef', 'latin1');
// Where each byte's two hex digits go in `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`.
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

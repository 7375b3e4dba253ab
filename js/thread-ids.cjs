'use strict';
// Thread ids as given: a lone surrogate reaches the UTF-8 runtime as U+FFFD (DECISIONS B1). The runtime keeps the
// ill-formed ones as JSON.stringify writes them, so that the inspector names their threads as given.
const native = require('./native.cjs');

function noteThreadId(id) {
  if (typeof id === 'string' && !id.isWellFormed()) native.noteGivenThreadId(JSON.stringify(id));
}

module.exports = { noteThreadId };

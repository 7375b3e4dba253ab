'use strict';
// The generated napi loader (index.js at the package root) picks the right .node binary for this platform.
module.exports = require('../index.js');

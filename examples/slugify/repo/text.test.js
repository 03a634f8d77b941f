const test = require('node:test');
const assert = require('node:assert');
const { words } = require('./text.js');

test('words splits on whitespace', () => {
  assert.deepStrictEqual(words('  a  b c '), ['a', 'b', 'c']);
});

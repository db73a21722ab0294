'use strict';

var res = Object.create(require('http').ServerResponse.prototype);

module.exports = res;

/**
 * Sets the HTTP status code.
 */
res.status = function status(code) {
  this.statusCode = code;
  return this;
};

res.send = function send(body) {
  var chunk = body;
  this.end(chunk);
  return this;
};

exports.json = (obj) => {
  return JSON.stringify(obj);
};

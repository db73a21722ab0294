'use strict';

var utils = require('./utils');

var defaults = {
    delimiter: '&',
    depth: 5
};

var parseValues = function parseQueryStringValues(str, options) {
    return str.split(options.delimiter);
};

// Parses a query string into an object.
module.exports = function (str, opts) {
    var options = utils.assign({}, defaults, opts);
    if (str === '' || str === null || typeof str === 'undefined') {
        return {};
    }
    return parseValues(str, options);
};

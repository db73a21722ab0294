function Router(options) {
  this.routes = [];
  this.strict = options && options.strict;
}

// Adds a route.
Router.prototype.route = function (path, handler) {
  this.routes.push({ path: path, handler: handler });
  return this;
};

Router.prototype.match = function (path) {
  return this.routes.filter(function (r) {
    return r.path === path;
  });
};

module.exports.Router = Router;
module.exports.createRouter = function createRouter(options) {
  return new Router(options);
};
exports.Layer = class {
  constructor(path) {
    this.path = path;
  }
};

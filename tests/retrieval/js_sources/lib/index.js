const settings = {
  indent: 2,
  eol: '\n',
};

const api = {
  parse(text) {
    return JSON.parse(text);
  },
  stringify: function (value) {
    return JSON.stringify(value, null, settings.indent);
  },
  run: async (file) => {
    return file;
  },
};

module.exports = {
  api,
  load(path) {
    return api.parse(path);
  },
  save: (path, value) => api.stringify(value),
};

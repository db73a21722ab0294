const units = ['B', 'kB', 'MB'];

// Formats a number of bytes for people.
export default function (bytes, { precision = 1 } = {}) {
  let unit = 0;
  while (bytes >= 1000 && unit < units.length - 1) {
    bytes /= 1000;
    unit += 1;
  }
  return `${bytes.toFixed(precision)} ${units[unit]}`;
}

export const actions = {
  add(state: number[], item: number): number[] {
    return [...state, item];
  },
  clear: (): number[] => [],
};

export default class {
  #items: number[] = [];

  render = (): JSX.Element => {
    return <ul>{this.#items.length}</ul>;
  };
}

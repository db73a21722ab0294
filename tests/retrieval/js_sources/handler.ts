interface Event {
  type: string;
}

export class Handler {
  private seen: number = 0;

  // Counts an event.
  handle = (event: Event): number => {
    this.seen += 1;
    return this.seen;
  };

  static create = function (): Handler {
    return new Handler();
  };

  reset(): void {
    this.seen = 0;
  }
}

export default (event: Event): boolean => event.type === 'click';

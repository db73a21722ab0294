/* A counter with a maximum. */
export default {
  name: 'counter',
  data() {
    return { count: 0 };
  },
  methods: {
    // Adds one, up to the maximum.
    increment() {
      this.count = Math.min(this.count + 1, this.max);
    },
    reset: function () {
      this.count = 0;
    },
  },
  props: { max: Number },
};

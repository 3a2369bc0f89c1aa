// Progress arrives once a second per running task; with thousands of tasks that is thousands of
// DOM writes a second. Updates are kept per task (the latest wins) and applied together once per
// animation frame, so the browser lays the page out once per frame, not once per event.

export class ProgressBatch {
  constructor(apply) {
    this.apply = apply;
    this.pending = new Map();
    this.frame = 0;
  }

  push(id, value) {
    this.pending.set(id, value);
    if (this.frame === 0) this.frame = requestAnimationFrame(() => this.flush());
  }

  flush() {
    this.frame = 0;
    const batch = this.pending;
    this.pending = new Map();
    for (const [id, value] of batch) this.apply(id, value);
  }

  cancel() {
    if (this.frame !== 0) cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.pending.clear();
  }
}

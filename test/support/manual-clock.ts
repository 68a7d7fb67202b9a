import type { Clock } from '../../contract/clock.js';

/** A clock that stands still until told to move: tests move time instead of waiting. */
export class ManualClock implements Clock {
  private current: number;

  constructor(start: Date = new Date()) {
    this.current = start.getTime();
  }

  now(): Date {
    return new Date(this.current);
  }

  advance(milliseconds: number): void {
    this.current += milliseconds;
  }

  set(to: Date): void {
    this.current = to.getTime();
  }
}

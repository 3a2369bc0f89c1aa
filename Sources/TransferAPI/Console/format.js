// How numbers and times read to a person.

const UNITS = ["B", "KB", "MB", "GB", "TB"];

/** 1536 → "1.5 KB" (powers of 1000, as network rates are usually read). */
export function bytes(n) {
  if (n === null || n === undefined) return "–";
  let value = Number(n);
  let unit = 0;
  while (Math.abs(value) >= 1000 && unit < UNITS.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${UNITS[unit]}`;
}

export function rate(bytesPerSecond) {
  return `${bytes(Math.round(bytesPerSecond || 0))}/s`;
}

/** "2026-11-28T13:01:14.123Z" → "13:01:14" today, the date too otherwise. */
export function time(rfc3339) {
  if (!rfc3339) return "–";
  const date = new Date(rfc3339);
  const sameDay = date.toDateString() === new Date().toDateString();
  return sameDay ? date.toLocaleTimeString() : date.toLocaleString();
}

/** The fraction of a task done, 0…1, or null when the total is unknown. */
export function fraction(progress) {
  if (!progress) return null;
  if (typeof progress.fraction === "number") return progress.fraction;
  const expected = progress.bytes_expected_to_receive || progress.bytes_expected_to_send;
  const moved = progress.bytes_expected_to_receive ? progress.bytes_received : progress.bytes_sent;
  return expected > 0 ? moved / expected : null;
}

/** Bytes moved so far, counting the direction that carries the task's payload. */
export function moved(progress) {
  if (!progress) return 0;
  return Math.max(progress.bytes_received || 0, progress.bytes_sent || 0);
}

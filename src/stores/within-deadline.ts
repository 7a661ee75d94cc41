/**
 * `work`, or a rejection with `onLate()` once `ms` have passed. The work is not cancelled (a
 * driver cannot take a sent command back): it goes on, and its late outcome is dropped.
 */
export function withinDeadline<T>(work: Promise<T>, ms: number, onLate: () => Error): Promise<T> {
  work.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(onLate()), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

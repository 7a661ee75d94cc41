/**
 * Waiting work, one queue per tenant, served in turn (round robin): a tenant's burst waits
 * behind itself, never in front of another tenant's requests. Within a tenant, first in, first
 * out: only each tenant's oldest item is ever offered.
 */
export interface FairQueue<T> {
  push(tenant: string, item: T): void;
  /**
   * The oldest item of the first tenant, in turn, whose oldest item `accept` takes: removed and
   * returned, and that tenant goes to the back of the turn. Undefined when `accept` takes none.
   */
  next(accept: (item: T) => boolean): T | undefined;
  /** Take an item out wherever it waits (its request went away or ran out of time). */
  remove(tenant: string, item: T): boolean;
  readonly size: number;
}

export function createFairQueue<T>(): FairQueue<T> {
  // Insertion order of the map is the turn: a tenant served goes to the back.
  const queues = new Map<string, T[]>();
  let size = 0;
  return {
    get size() {
      return size;
    },
    push(tenant, item) {
      const queue = queues.get(tenant);
      if (queue === undefined) queues.set(tenant, [item]);
      else queue.push(item);
      size += 1;
    },
    next(accept) {
      for (const [tenant, queue] of queues) {
        const head = queue[0];
        if (head === undefined || !accept(head)) continue;
        queue.shift();
        size -= 1;
        queues.delete(tenant);
        if (queue.length > 0) queues.set(tenant, queue);
        return head;
      }
      return undefined;
    },
    remove(tenant, item) {
      const queue = queues.get(tenant);
      const index = queue?.indexOf(item) ?? -1;
      if (queue === undefined || index === -1) return false;
      queue.splice(index, 1);
      size -= 1;
      if (queue.length === 0) queues.delete(tenant);
      return true;
    },
  };
}

import { BadInputError } from '../core/errors.js';

/**
 * A call on a governed SDK client that Self-GC cannot govern (a beta or batch API, a
 * conversation held on the provider's servers, a raw request to a model endpoint). It is
 * refused rather than sent around the window; the original, unwrapped client still sends it.
 */
export class UngovernedCallError extends BadInputError {
  /** The call refused, as written on the client: `beta.messages.create`, `post /v1/messages`. */
  readonly call: string;
  constructor(call: string, reason: string) {
    super(
      `${call} is not governed by Self-GC: ${reason}. Call it on the original (unwrapped) client to send it as written.`,
    );
    this.name = 'UngovernedCallError';
    this.call = call;
  }
}

// The abort reason for a request whose caller hung up (SPEC §7 `aborted`): the session ends, no body is sent.
export class CallerGone extends Error {
  constructor() {
    super("the caller hung up");
    this.name = "AbortError";
  }
}

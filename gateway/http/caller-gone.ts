// The abort reason for a request whose caller is gone, with the code its log line gives: it hung up (SPEC §7
// `aborted`: the session ends, no body is sent), or the gateway let it go and closed its connection: it left more of
// its stream unread than the gateway holds for one caller (`caller_too_slow`), or its session held the most when the
// gateway passed what it holds for all of them (`overloaded`; gateway/directory/held-bytes.ts).
export type GoneCode = "aborted" | "caller_too_slow" | "overloaded";

const WHY: Record<GoneCode, string> = {
  aborted: "the caller hung up",
  caller_too_slow: "the caller left more of its stream unread than the gateway holds for it",
  overloaded: "the gateway held the most for this caller when it passed what it holds for all of them",
};

export class CallerGone extends Error {
  constructor(readonly code: GoneCode = "aborted") {
    super(WHY[code]);
    this.name = "AbortError";
  }
}

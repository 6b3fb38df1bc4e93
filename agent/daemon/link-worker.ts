// The link thread (link-thread.ts): the agent's reconnecting links to its coordinators, each a Link as on one
// thread, reading the coordinator's messages with the agent's reader. Its beats go out only while the main thread
// has turned its event loop lately, which it says with a pulse each second.
import { parentPort, workerData } from "node:worker_threads";
import { Backoff } from "../../src/link/backoff.ts";
import { Link, type Connection } from "../../src/link/link.ts";
import { parseMessage, ToAgentSchema, type FromAgent, type ToAgent } from "../../src/wire/agent.ts";
import type { FromLinkThread, ToLinkThread } from "./link-thread.ts";

const { stallAllowedMs } = workerData as { stallAllowedMs: number };
const post = (message: FromLinkThread) => parentPort!.postMessage(message);

/** When the main thread was last heard from: anything it sends proves it turned. */
let mainTurned = performance.now();
const mainAlive = () => performance.now() - mainTurned <= stallAllowedMs;

interface Hosted {
  link: Link<ToAgent, FromAgent>;
  /** The open connection and its number, which the main thread's sends name. */
  current?: { conn: number; connection: Connection<FromAgent> };
}

const links = new Map<number, Hosted>();
let nextConn = 0;

/** Messages per link on the socket since the last report: the main thread learns them once a turn. */
const sent = new Map<number, number>();
function onSocket(id: number): void {
  if (sent.size === 0) setImmediate(reportSent);
  sent.set(id, (sent.get(id) ?? 0) + 1);
}
function reportSent(): void {
  for (const [link, count] of sent) post({ t: "sent", link, count });
  sent.clear();
}

function start(id: number, options: Extract<ToLinkThread, { t: "start" }>["options"]): void {
  const { backoff, ...rest } = options;
  const hosted: Hosted = {
    link: new Link<ToAgent, FromAgent>(
      { ...rest, read: (data) => parseMessage(ToAgentSchema, data), backoff: new Backoff(...backoff), alive: mainAlive },
      {
        open: (connection) => {
          hosted.current = { conn: nextConn++, connection };
          post({ t: "open", link: id, conn: hosted.current.conn, url: hosted.link.url });
        },
        message: (message) => {
          if (hosted.current) post({ t: "message", link: id, conn: hosted.current.conn, message });
        },
        closed: (info) => {
          hosted.current = undefined;
          post({ t: "closed", link: id, info });
        },
      },
    ),
  };
  links.set(id, hosted);
  hosted.link.start();
}

parentPort!.on("message", (message: ToLinkThread) => {
  mainTurned = performance.now();
  switch (message.t) {
    case "pulse":
      return;
    case "start":
      return start(message.link, message.options);
    case "send":
      for (const [id, conn, m] of message.batch) {
        const current = links.get(id)?.current;
        // a send for a connection that has closed is dropped, as its own Connection would drop it
        if (current?.conn === conn) current.connection.send(m, () => onSocket(id));
        else onSocket(id);
      }
      return;
    case "busy":
      return links.get(message.link)?.link.busy(message.on);
    case "reset-backoff":
      return links.get(message.link)?.link.resetBackoff();
    case "stop-reconnecting":
      return links.get(message.link)?.link.stopReconnecting();
    case "close": {
      const hosted = links.get(message.link);
      links.delete(message.link);
      const { code, reason, waitMs } = message;
      void (hosted?.link.close({ code, reason, waitMs }) ?? Promise.resolve()).then(() => post({ t: "close-done", link: message.link }));
      return;
    }
  }
});

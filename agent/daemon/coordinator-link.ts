// `svc-agent start`'s connection to the coordinator (DESIGN §1, §4): connect over WebSocket, answer each
// challenge with evidence, advertise, run sealed sessions one at a time, and reconnect with jittered
// backoff when the link drops, aborting any session it was running so nothing is left dangling.
import { signEvidence, type UnsignedEvidence } from "../../src/trust/attestation.ts";
import { keysDigest } from "../../src/trust/hardware-chain.ts";
import { AGENT_ASK_EVERY, idleHeartbeatMs } from "../../src/link/heartbeat.ts";
import { ThreadLink } from "./link-thread.ts";
import type { ReleaseManifest } from "../../src/trust/release-manifest.ts";
import type { TrustLevel } from "../../src/receipt/rungs.ts";
import { GATEWAY_MAX_FRAME_BYTES } from "../../src/wire/gateway.ts";
import { AGENT_PATH, type FromAgent, type ToAgent } from "../../src/wire/agent.ts";
import { runAttestor } from "./attestor.ts";
import type { InferenceEngine } from "../engine/inference.ts";
import type { FaultInjection } from "./session-runner.ts";
import type { AgentKeys } from "./identity.ts";
import type { ModelStore } from "../models/store.ts";
import { runSession } from "./session-runner.ts";

export interface DaemonOptions {
  coordinatorUrl: string;
  keys: AgentKeys;
  engine: InferenceEngine;
  store: ModelStore;
  /** The aliases to advertise (present and fitting in memory); loaded only when a session needs one. */
  aliases: readonly string[];
  name?: string;
  /** The operator's enrollment token (`--token`), unless this machine is admitted by hardware evidence. */
  token?: string;
  /** `--attestor CMD` for the hardware rung. */
  attestor?: string;
  /** The transparent rung's evidence: this build's measurement and a release manifest listing it. */
  release?: { measurement: string; manifest: ReleaseManifest };
  faults?: FaultInjection;
  heartbeatMs: number;
  log(line: string): void;
  /** Once, at the first advertisement since start: what the ready line (src/process/ready-line.ts) reports. */
  ready?(state: { provider: string; rung: TrustLevel; aliases: string[] }): void;
}

/** How long a stopping agent waits for the coordinator to acknowledge its close. */
const CLOSE_WAIT_MS = 2_000;

export class AgentDaemon {
  /** On a thread of its own, so that work holding this one (a model's load) holds back no beat. */
  private readonly link: ThreadLink;
  /** What this connection has been granted, and the attestor's chain for it (asked once per connection). */
  private connection?: { send: (message: FromAgent) => void; grant?: { rung: TrustLevel; serial?: string }; chain?: Promise<string[] | undefined> };
  /** Why the coordinator refused this agent, for the disconnect line. */
  private refusal?: string;
  private session?: { id: string; controller: AbortController; done: Promise<void> };
  /** Set once the agent is leaving: it finishes the session it runs and takes no other. */
  private leaving = false;
  private announced = false;
  /** What this agent advertises: the aliases it started with, less any whose file failed its pin since. */
  private advertised: string[];

  constructor(private readonly options: DaemonOptions) {
    const { coordinatorUrl, log } = options;
    this.advertised = [...options.aliases];
    this.link = new ThreadLink(
      {
        url: coordinatorUrl,
        path: AGENT_PATH,
        maxPayload: GATEWAY_MAX_FRAME_BYTES,
        // the busy rate while a session runs (its failure must reach the caller within SPEC time), the idle one otherwise
        heartbeatMs: options.heartbeatMs,
        idleHeartbeatMs: idleHeartbeatMs(options.heartbeatMs),
        // it need not judge the coordinator fast (src/link/heartbeat.ts), and each answer costs the coordinator a write
        askEvery: AGENT_ASK_EVERY,
        backoff: [250, 5_000],
        bearer: options.token,
      },
      {
        open: (connection) => {
          // sessions send on their own connection, so a frame of a dropped one never reaches the next
          this.connection = { send: connection.send };
          this.refusal = undefined;
          log(`connected to ${this.link.url}`);
        },
        message: (message) => {
          if (!message) return log("the coordinator sent an invalid message; ignored");
          this.onMessage(message).catch((err: Error) => log(`error: ${err.message}`));
        },
        closed: ({ code, reason, error, retryMs }) => {
          this.connection = undefined;
          // nothing is left dangling: a session whose link is gone cannot deliver its frames
          this.session?.controller.abort(new Error("the link to the coordinator dropped"));
          if (retryMs === undefined) return;
          const why = this.refusal ? `${this.refusal} (close code ${code})` : (error ?? (reason || `connection closed (${code})`));
          log(`disconnected: ${why}; reconnecting in ${(retryMs / 1000).toFixed(1)} s`);
        },
      },
    );
  }

  start(): void {
    this.link.start();
  }

  private async onMessage(message: ToAgent): Promise<void> {
    const connection = this.connection;
    if (!connection) return;
    const { log } = this.options;
    if (message.t === "challenge") {
      connection.chain ??= this.attest();
      connection.send({ t: "evidence", evidence: signEvidence(this.options.keys.signer, this.evidence(message.nonce, await connection.chain)) });
    } else if (message.t === "granted") {
      const first = connection.grant === undefined;
      const changed = connection.grant?.rung !== message.rung;
      connection.grant = { rung: message.rung, ...(message.serial === undefined ? {} : { serial: message.serial }) };
      // a re-answered challenge that keeps the rung is not a state change worth a line
      if (changed) {
        log(`granted rung ${message.rung}${message.serial ? ` (serial ${message.serial})` : ""} as provider ${message.provider_id}`);
        for (const refusal of message.refusals) log(`attestation: ${refusal}`);
      }
      if (!first) return;
      this.link.resetBackoff();
      // the session the dropped link aborted may still be unwinding (an engine sees the abort at its next token):
      // routable only once it has, or the first session offered here would be refused as a second one
      await this.session?.done;
      if (this.connection !== connection) return;
      this.advertise(connection.send);
      if (!this.announced) {
        this.announced = true;
        this.options.ready?.({ provider: message.provider_id, rung: message.rung, aliases: [...this.advertised] });
      }
    } else if (message.t === "refused") {
      // said once, in the disconnect line that follows, with the close code
      this.refusal = `refused: ${message.reason}`;
    } else if (message.t === "cancel") {
      if (this.session?.id === message.id) this.session.controller.abort(new Error("cancelled by the gateway"));
    } else if (connection.grant) {
      this.run(message, connection.grant, connection.send);
    }
  }

  private run(message: Extract<ToAgent, { t: "session" }>, grant: { rung: TrustLevel; serial?: string }, send: (m: FromAgent) => void) {
    if (this.leaving) {
      send({ t: "end", id: message.id, error: "the provider is leaving" });
      return;
    }
    if (this.session) {
      // the coordinator runs one session at a time per provider; a second one means its view is stale
      send({ t: "end", id: message.id, error: "the provider is already in a session" });
      return;
    }
    const controller = new AbortController();
    const { keys, engine, store, faults, log } = this.options;
    this.link.busy(true);
    const withdraw = (alias: string, why: string) => this.withdraw(alias, why);
    const congestion = () => this.link.congestion();
    const done = runSession(message, { keys, engine, store, advertised: this.advertised, grant, faults, send, congestion, log, withdraw }, controller.signal)
      .catch((err: Error) => log(`session ${message.id} error: ${err.message}`))
      .finally(() => {
        this.session = undefined;
        this.link.busy(false);
      });
    this.session = { id: message.id, controller, done };
  }

  private advertise(send: (message: FromAgent) => void): void {
    send({ t: "advertise", aliases: [...this.advertised] });
    this.options.log(`advertising [${this.advertised.join(", ")}]`);
  }

  /** The alias's file failed its pin on load: it leaves this agent's advertisement now, on this link and the next. */
  private withdraw(alias: string, why: string): void {
    if (!this.advertised.includes(alias)) return;
    this.advertised = this.advertised.filter((a) => a !== alias);
    this.options.log(`not advertising ${why}; svc-agent doctor says how to fix it`);
    if (this.connection?.grant) this.advertise(this.connection.send);
  }

  private evidence(nonce: string, chain: string[] | undefined): UnsignedEvidence {
    const { keys, name, release } = this.options;
    return {
      nonce,
      signing_key: keys.signer.publicKey,
      sealing_key: keys.sealing.publicKey,
      ...(name === undefined ? {} : { name }),
      ...(release === undefined ? {} : { measurement: release.measurement, manifest: release.manifest }),
      ...(chain === undefined ? {} : { chain }),
    };
  }

  /** The attestor's chain for this connection, or none (the agent then asks for a lower rung). */
  private async attest(): Promise<string[] | undefined> {
    const { attestor, keys, log } = this.options;
    if (attestor === undefined) return undefined;
    try {
      return await runAttestor(attestor, keysDigest(keys.signer.publicKey, keys.sealing.publicKey));
    } catch (err) {
      log(`attestation: the attestor failed: ${(err as Error).message}`);
      return undefined;
    }
  }

  /**
   * Leaves the directory: the coordinator stops routing here and hands this agent's queue to others, the
   * running session gets up to `graceMs` to finish (then it is aborted), and the link closes normally.
   */
  async stop(graceMs = 0): Promise<void> {
    this.leaving = true;
    this.link.stopReconnecting();
    this.link.send({ t: "leaving" });
    const session = this.session;
    if (session) {
      const deadline = setTimeout(() => session.controller.abort(new Error("the agent is stopping")), graceMs);
      await session.done;
      clearTimeout(deadline);
    }
    // wait for the closing handshake, so the session's last frames are flushed before the process exits
    await this.link.close({ code: 1001, reason: "agent stopping", waitMs: CLOSE_WAIT_MS });
  }
}

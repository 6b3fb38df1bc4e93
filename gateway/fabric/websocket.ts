// The fabric to a coordinator in another process (`--coordinator URL`): one reconnecting WebSocket on
// `/v1/gateway`, JSON messages checked by hand (src/wire/gateway.ts: both ends are ours), the coordinator's secret on every connect.
import { Link } from "../../src/link/link.ts";
import { GATEWAY_MAX_FRAME_BYTES, GATEWAY_PATH, readToGateway, type FromGateway, type ToGateway } from "../../src/wire/gateway.ts";
import type { Fabric, FabricHandlers, FabricLink } from "./fabric.ts";

export interface WebSocketFabricOptions {
  url: string;
  heartbeatMs: number;
  /** The coordinator's gateway secret. */
  secret?: string;
}

export class WebSocketFabric implements Fabric {
  constructor(private readonly options: WebSocketFabricOptions) {}

  get where(): string {
    return this.options.url;
  }

  connect(handlers: FabricHandlers): FabricLink {
    const { url, heartbeatMs, secret } = this.options;
    const link = new Link<ToGateway, FromGateway>(
      { url, path: GATEWAY_PATH, read: readToGateway, maxPayload: GATEWAY_MAX_FRAME_BYTES, heartbeatMs, bearer: secret },
      {
        open: () => {
          link.resetBackoff();
          handlers.open();
        },
        message: (message) => handlers.message(message),
        closed: ({ error, wasOpen, retryMs }) => handlers.closed({ ...(error === undefined ? {} : { error }), wasOpen, ...(retryMs === undefined ? {} : { retryMs }) }),
      },
    );
    link.start();
    return {
      get connected() {
        return link.connected;
      },
      send: (message) => link.send(message),
      close: () => link.close(),
    };
  }
}

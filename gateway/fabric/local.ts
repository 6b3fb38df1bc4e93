// The fabric to the coordinator embedded in this process (the default): messages handed over as objects, with
// no socket, no JSON and no schema check between two parts of one program. Each side is called on a later
// microtask, as a socket would, so neither runs inside the other's call.
import type { FromGateway, ToGateway } from "../../src/wire/gateway.ts";
import type { Fabric, FabricHandlers, FabricLink } from "./fabric.ts";

/** The coordinator's side of one gateway link (gateway/coordinator/gateway-link.ts). */
export interface GatewayEndpoint {
  receive(message: FromGateway): void;
  /** The gateway is gone: its queued and running sessions are cancelled. */
  close(): void;
}

/** What the embedded coordinator offers: a link for a gateway in the same process. */
export interface LocalCoordinator {
  openLocalLink(send: (message: ToGateway) => void): GatewayEndpoint;
}

export class LocalFabric implements Fabric {
  readonly where = "embedded";

  constructor(private readonly coordinator: LocalCoordinator) {}

  connect(handlers: FabricHandlers): FabricLink {
    let open = true;
    const endpoint = this.coordinator.openLocalLink((message) => queueMicrotask(() => open && handlers.message(message)));
    queueMicrotask(() => open && handlers.open());
    return {
      get connected() {
        return open;
      },
      send: (message) => {
        if (!open) return false;
        queueMicrotask(() => open && endpoint.receive(message));
        return true;
      },
      close: async () => {
        if (!open) return;
        open = false;
        endpoint.close();
        handlers.closed({ wasOpen: true });
      },
    };
  }
}

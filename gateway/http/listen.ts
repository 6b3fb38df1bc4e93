// Listening and closing an HTTP server with the errors a person can act on (port taken, no privilege), and
// binding a port before the server that will serve on it exists.
import type { Server } from "node:http";
import { createServer, type AddressInfo, type Server as NetServer } from "node:net";

export function listen(server: Server, port: number, host: string, what: string): Promise<string> {
  return listenWith(server, (done) => server.listen(port, host, done), port, host, what);
}

/**
 * Binds `port` with nothing serving on it yet: a process that must start other things before its HTTP server exists
 * (the gateway: its coordinator link, which logs) fails on a taken port first, before any of them has said a word.
 * `serveOn` hands the bound socket to the server.
 */
export async function reservePort(port: number, host: string, what: string): Promise<NetServer> {
  const reserved = createServer();
  await listenWith(reserved, (done) => reserved.listen(port, host, done), port, host, what);
  return reserved;
}

/** Serves `server` on the socket `reservePort` bound; the reservation is the server's from then on (closing it closes that). */
export function serveOn(server: Server, reserved: NetServer): Promise<string> {
  return new Promise((resolve) => server.listen(reserved, () => resolve(originOf(server))));
}

function listenWith(server: Server | NetServer, start: (done: () => void) => void, port: number, host: string, what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      if (err.code === "EADDRINUSE") reject(new Error(`${what} port ${port} on ${host} is already in use; pick another port`));
      else if (err.code === "EACCES") reject(new Error(`${what} port ${port} on ${host} needs privileges this user lacks`));
      else reject(err);
    };
    server.once("error", onError);
    start(() => {
      server.off("error", onError);
      resolve(originOf(server));
    });
  });
}

function originOf(server: Server | NetServer): string {
  const address = server.address() as AddressInfo;
  const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return `http://${shownHost}:${address.port}`;
}

export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

// Listening and closing an HTTP server with the errors a person can act on (port taken, no privilege).
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";

export function listen(server: Server, port: number, host: string, what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      if (err.code === "EADDRINUSE") reject(new Error(`${what} port ${port} on ${host} is already in use; pick another port`));
      else if (err.code === "EACCES") reject(new Error(`${what} port ${port} on ${host} needs privileges this user lacks`));
      else reject(err);
    };
    server.once("error", onError);
    server.listen(port, host, () => {
      server.off("error", onError);
      const address = server.address() as AddressInfo;
      const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
      resolve(`http://${shownHost}:${address.port}`);
    });
  });
}

export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

// The options `npm start` and `npm run demo` share, as docs/configuration.md lists them: where the gateway and its
// embedded coordinator listen, and the data dir; a usage error is one line ending `; see --help` (exit 64).
import { Command } from "commander";
import { DEFAULT_DATA_DIR } from "../src/process/data-dir.ts";
import { parseScriptOptions, port } from "../src/process/cli-options.ts";

export interface ServiceOptions {
  host: string;
  port: number;
  coordinatorPort: number;
  dataDir: string;
}

/** The options of the script `name`, parsed from argv. */
export function serviceOptions(name: string): ServiceOptions {
  return parseScriptOptions<ServiceOptions>(
    new Command(name)
      .option("--host <host>", "address the gateway listens on", "127.0.0.1")
      .option("--port <port>", "gateway port", port, 8080)
      .option("--coordinator-port <port>", "coordinator port", port, 8081)
      .option("--data-dir <dir>", "state and models; the demo's under DATA_DIR/demo", DEFAULT_DATA_DIR),
    name,
  );
}

// How every long-running svc process stops: the first SIGTERM or SIGINT shuts down gracefully (a service
// manager's stop, or Ctrl-C), a second one exits at once.

export function onShutdownSignal(close: () => Promise<void>): void {
  let stopping = false;
  const stop = () => {
    if (stopping) process.exit(1);
    stopping = true;
    void close().finally(() => process.exit(0));
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}

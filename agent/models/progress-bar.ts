// A terminal progress bar for downloads (cli-progress); silent when stderr is not a terminal.
import cliProgress from "cli-progress";
import type { PullProgress } from "./pull.ts";

export function downloadBar(label: string): PullProgress {
  const bar = new cliProgress.SingleBar(
    {
      format: `${label} {bar} {percentage}% | {doneMb}/{totalMb} MB | ETA {eta_formatted}`,
      stream: process.stderr,
      hideCursor: true,
    },
    cliProgress.Presets.shades_classic,
  );
  const mb = (n: number) => (n / 1e6).toFixed(1);
  let total = 0;
  return {
    start(size, already) {
      total = size;
      bar.start(size, already, { doneMb: mb(already), totalMb: mb(size) });
    },
    update(done) {
      bar.update(done, { doneMb: mb(done), totalMb: mb(total) });
    },
    stop() {
      bar.stop();
    },
  };
}

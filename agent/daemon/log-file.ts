// `start --log-file FILE`: the agent's lines, timestamped, in a file that rotates the way newsyslog and
// logrotate do it: past the size cap FILE becomes FILE.1 (FILE.1 becomes FILE.2, and so on), keeping
// LOG_KEEP old files, so an agent left running as a service for months never fills the disk.
import { appendFileSync, renameSync, rmSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { makeDirs } from "../../src/process/make-dir.ts";

export const DEFAULT_LOG_MAX_MB = 10;
export const LOG_KEEP = 3;

export class RotatingLog {
  private size: number;
  private readonly maxBytes: number;

  constructor(
    readonly path: string,
    maxMb = DEFAULT_LOG_MAX_MB,
    private readonly now = () => new Date(),
  ) {
    this.maxBytes = Math.max(1, Math.floor(maxMb * 1024 * 1024));
    try {
      makeDirs(dirname(path), 0o700);
      appendFileSync(path, "", { mode: 0o600 });
      this.size = statSync(path).size;
    } catch (err) {
      throw new Error(`--log-file ${path}: cannot write it (${(err as Error).message})`);
    }
  }

  write(line: string): void {
    const text = `${this.now().toISOString()} ${line}\n`;
    const bytes = Buffer.byteLength(text);
    if (this.size > 0 && this.size + bytes > this.maxBytes) this.rotate();
    appendFileSync(this.path, text, { mode: 0o600 });
    this.size += bytes;
  }

  private rotate(): void {
    rmSync(`${this.path}.${LOG_KEEP}`, { force: true });
    for (let n = LOG_KEEP - 1; n >= 1; n--) {
      try {
        renameSync(`${this.path}.${n}`, `${this.path}.${n + 1}`);
      } catch {
        // that generation does not exist yet
      }
    }
    renameSync(this.path, `${this.path}.1`);
    this.size = 0;
  }
}

// What `service status` reports, whichever manager runs the service.

export interface ServiceState {
  /** The manager knows the service (launchd loaded it, systemd found the unit). */
  loaded: boolean;
  running: boolean;
  pid?: number;
  /** How the last run ended, in the manager's words: `exit code 1`, `killed by SIGKILL`. */
  lastExit?: string;
}

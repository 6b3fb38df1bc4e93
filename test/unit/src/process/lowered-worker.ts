// thread-priority.test.ts's worker: lowers its own thread and answers what it sees of its priority.
import { readlinkSync } from "node:fs";
import { getPriority } from "node:os";
import { parentPort } from "node:worker_threads";
import { lowerThisThread } from "../../../../src/process/thread-priority.ts";

const lowered = lowerThisThread();
const tid = Number(readlinkSync("/proc/thread-self").split("/").pop());
parentPort!.postMessage({ lowered, tid, nice: getPriority(tid) });

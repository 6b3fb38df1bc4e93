#!/usr/bin/env node
// Entry shim: lets node run the TypeScript sources through tsx (no build step), then hands over.
import { register } from "tsx/esm/api";

register();
await import("./svc-agent.ts");

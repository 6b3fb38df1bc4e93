// Argument parsers shared by the two command lines.
import { InvalidArgumentError } from "commander";

export const positiveNumber = (value: string): number => {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError("expected a positive number");
  return n;
};

export const positiveInteger = (value: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError("expected a positive integer");
  return n;
};

export const port = (value: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError("expected a port number (0-65535)");
  return n;
};

/** For repeatable options such as `--model A=P --model B=Q`. */
export const collect = (value: string, previous: string[]): string[] => [...previous, value];

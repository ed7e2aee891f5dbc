import { ToolError } from "./types.js";

/**
 * Argument checks shared by the built-in tools. Models do send wrong types now and then; the error names the tool
 * and the field so the model can fix its next call without guessing.
 */

export function requireString(tool: string, args: Record<string, unknown>, field: string): string {
  const value = args[field];
  if (value === undefined || value === null) throw new ToolError(`${tool}: "${field}" is required`);
  if (typeof value !== "string") throw new ToolError(`${tool}: "${field}" must be a string`);
  return value;
}

export function requireNonEmptyString(tool: string, args: Record<string, unknown>, field: string): string {
  const value = requireString(tool, args, field);
  if (value === "") throw new ToolError(`${tool}: "${field}" must not be empty`);
  return value;
}

export function optionalInteger(
  tool: string,
  args: Record<string, unknown>,
  field: string,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number | undefined {
  const value = args[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value)) {
    throw new ToolError(`${tool}: "${field}" must be an integer`);
  }
  if (value < min || value > max) throw new ToolError(`${tool}: "${field}" must be between ${min} and ${max}`);
  return value;
}

export function optionalNumber(
  tool: string,
  args: Record<string, unknown>,
  field: string,
  exclusiveMin: number,
  max: number,
): number | undefined {
  const value = args[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isFinite(value)) throw new ToolError(`${tool}: "${field}" must be a number`);
  if (value <= exclusiveMin || value > max) {
    throw new ToolError(`${tool}: "${field}" must be greater than ${exclusiveMin} and at most ${max}`);
  }
  return value;
}

import { ConfigError } from "./errors.js";

/** `"${NAME}"` (whole value or embedded) → env value; an unset variable is an error naming the key path. */
export function resolveSecretRef(value: string | undefined, keyPath: string, env = process.env): string | undefined {
  if (value === undefined) return undefined;
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => {
    const v = env[name];
    if (v === undefined || v === "") {
      throw new ConfigError([`${keyPath}: references \${${name}}, which is not set in the environment`]);
    }
    return v;
  });
}

/**
 * The web console (SPEC 19): a Preact app built into dist/console/, which the gateway serves at `/`
 * (src/gateway/console-assets.ts). `npm run build` runs this after tsc. Assets get content hashes in their names,
 * so the gateway can let browsers cache them for good.
 */
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

const root = fileURLToPath(new URL(".", import.meta.url));

export default defineConfig({
  root,
  // relative asset URLs: the page works wherever the gateway (or a proxy in front of it) mounts it
  base: "./",
  logLevel: "warn",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: fileURLToPath(new URL("../dist/console/", import.meta.url)),
    emptyOutDir: true,
    target: "es2022",
    // no source maps in the package: the sources are in the repository
    sourcemap: false,
    reportCompressedSize: false,
    modulePreload: { polyfill: false },
  },
});

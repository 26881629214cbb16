/**
 * `bun test/http/openapi-typescript.ts <document.json> <out.ts>`: TypeScript types for an OpenAPI
 * document, by openapi-typescript, for the typed-client test (openapi.test.ts).
 *
 * openapi-typescript builds its output with the TypeScript 5 compiler API, which the project's
 * TypeScript 7 (the native compiler) does not have. In this process only, a Bun runtime plugin
 * loads the `typescript-5` package (an npm alias of typescript@5) where openapi-typescript's
 * `import ts from "typescript"` would load TypeScript 7's entry module.
 */
import { plugin } from "bun";

const [input, output] = process.argv.slice(2);
if (!input || !output) throw new Error("usage: bun test/http/openapi-typescript.ts <document.json> <out.ts>");

const typescript5 = Bun.resolveSync("typescript-5", import.meta.dir);
const typescriptOfGenerator = Bun.resolveSync("typescript", Bun.resolveSync("openapi-typescript", import.meta.dir));
const exactly = (path: string) => new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}$`);
plugin({
  name: "openapi-typescript on TypeScript 5",
  setup(build) {
    build.onLoad({ filter: exactly(typescriptOfGenerator) }, () => ({ contents: `import ts from ${JSON.stringify(typescript5)}; export default ts;`, loader: "js" }));
  },
});

const { default: openapiTS, astToString } = await import("openapi-typescript");
const ast = await openapiTS(JSON.parse(await Bun.file(input).text()));
await Bun.write(output, astToString(ast));

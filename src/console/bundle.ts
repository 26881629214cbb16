/**
 * The web console's files as the server holds them. `bun build --compile` bundles the HTML import
 * (its TSX and CSS) into the executable and lists the outputs in `page.files`; run from source,
 * the same page is bundled in memory on first use. Either way every file is kept with its gzip
 * form, so the HTTP layer answers from memory with its own headers.
 */
import { basename } from "node:path";
import page from "./ui/index.html";

export interface ConsoleFile {
  body: Uint8Array<ArrayBuffer>;
  gzipped: Uint8Array<ArrayBuffer>;
  contentType: string;
  etag: string;
}

export interface ConsoleBundle {
  index: ConsoleFile;
  /** The page's scripts and styles by URL path (`/chunk-1a2b3c.js`); their names carry a content hash. */
  assets: Map<string, ConsoleFile>;
}

interface BuiltFile {
  /** Where the page refers to it: `/` for the page itself. */
  urlPath: string;
  body: Uint8Array<ArrayBuffer>;
  contentType: string;
}

const consoleFile = ({ body, contentType }: BuiltFile): ConsoleFile => ({
  body,
  gzipped: Bun.gzipSync(body),
  contentType,
  etag: `"${Bun.hash(body).toString(36)}"`,
});

/** The outputs `bun build --compile` embedded, read from the executable's own file system. */
async function embeddedFiles(files: NonNullable<typeof page.files>): Promise<BuiltFile[]> {
  return Promise.all(
    files.map(async (file) => ({
      urlPath: file.path === page.index ? "/" : `/${basename(file.path)}`,
      body: await Bun.file(file.path).bytes(),
      contentType: file.headers["content-type"],
    })),
  );
}

/** Run from source (`bun src/main.ts`, tests in process): the same bundle, built now. */
async function builtFromSource(): Promise<BuiltFile[]> {
  const result = await Bun.build({ entrypoints: [page.index], target: "browser", minify: true });
  if (!result.success) throw new AggregateError(result.logs, "the web console failed to build");
  return Promise.all(
    result.outputs.map(async (output) => ({
      urlPath: output.type.startsWith("text/html") ? "/" : `/${basename(output.path)}`,
      body: new Uint8Array(await output.arrayBuffer()),
      contentType: output.type,
    })),
  );
}

async function loadBundle(): Promise<ConsoleBundle> {
  const built = await (page.files ? embeddedFiles(page.files) : builtFromSource());
  const index = built.find((file) => file.urlPath === "/");
  if (!index) throw new Error("the web console bundle has no HTML page");
  return { index: consoleFile(index), assets: new Map(built.filter((file) => file !== index).map((file) => [file.urlPath, consoleFile(file)])) };
}

let loading: Promise<ConsoleBundle> | undefined;

/** Loaded once per process, on the first request for the console. */
export function consoleBundle(): Promise<ConsoleBundle> {
  loading ??= loadBundle().catch((error) => {
    loading = undefined;
    throw error;
  });
  return loading;
}

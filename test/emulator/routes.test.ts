/**
 * The emulator's route table against its README: the list under "## Routes" is what the app registers, in the
 * order it matches them, so the two cannot drift. Read from a started emulator (`emu.routes`, from the Hono app).
 */
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";

const README = readFileSync(new URL("../../packages/langchain-service-emulator/README.md", import.meta.url), "utf8");

/** The `- \`METHOD /api/v1/path\`` lines of the README's "## Routes" section. */
function readmeRoutes(): string[] {
  const section = README.split(/^## /m).find((s) => s.startsWith("Routes\n"));
  if (!section) throw new Error('the emulator README has no "## Routes" section');
  return [...section.matchAll(/^- `([A-Z]+ \/api\/v1\/\S+)`$/gm)].map((m) => m[1]!);
}

let emu: Emulator | undefined;
afterEach(async () => {
  await emu?.close();
  emu = undefined;
});

describe("emulator routes", () => {
  it("the README lists every route the app registers, in its order, and no other", async () => {
    emu = await startEmulator({});
    const listed = readmeRoutes();
    expect(listed.length).toBeGreaterThan(30);
    expect(emu.routes).toEqual(listed);
  });

  it("routes given as an option come after the built-in ones and are served through the same pipeline", async () => {
    emu = await startEmulator({
      apiKeys: ["k"],
      routes: [
        {
          method: "GET",
          pattern: "/custom/:name",
          auth: "required",
          handler: (req) => ({ status: 200, body: { hello: req.params.name } }),
        },
      ],
    });
    expect(emu.routes.at(-1)).toBe("GET /api/v1/custom/:name");
    expect((await fetch(`${emu.url}/custom/a%20b`)).status).toBe(402); // no credential: the discovery 402
    const res = await fetch(`${emu.url}/custom/a%20b`, { headers: { authorization: "Bearer k" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-ratelimit-limit-requests")).not.toBeNull();
    expect(await res.json()).toEqual({ hello: "a b" });
    // a path served under another method: 405 with Allow; an unknown one: 404
    const put = await fetch(`${emu.url}/custom/x`, { method: "PUT", headers: { authorization: "Bearer k" } });
    expect(put.status).toBe(405);
    expect(put.headers.get("allow")).toBe("GET");
    expect((await fetch(`${emu.url}/nowhere`)).status).toBe(404);
  });
});

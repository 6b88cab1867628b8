/**
 * The emulator's CORS (`cors: true`, `--cors`): a page's preflight is answered with what the client sends (its
 * credential, sign-in and payment headers), and every answer lets the page read the headers the client reads.
 * Over loopback HTTP, as a browser sends them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../../packages/langchain-service-emulator/src/cli.js";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { ConfigurationError } from "../../src/http/errors.js";

const ORIGIN = "http://127.0.0.1:9";
let emu: Emulator;
let plain: Emulator;

beforeAll(async () => {
  emu = await startEmulator({ cors: true, apiKeys: [{ key: "cors-key", usd: 5 }] });
  plain = await startEmulator({ apiKeys: [{ key: "cors-key", usd: 5 }] });
});
afterAll(async () => {
  await emu?.close();
  await plain?.close();
});

const list = (value: string | null) =>
  (value ?? "")
    .split(",")
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);

function preflight(url: string, headers: string) {
  return fetch(url, {
    method: "OPTIONS",
    headers: { origin: ORIGIN, "access-control-request-method": "POST", "access-control-request-headers": headers },
  });
}

describe("emulator CORS", () => {
  it("answers a preflight with 204: any origin, POST, and the credential, sign-in and payment headers", async () => {
    const res = await preflight(`${emu.url}/chat/completions`, "authorization,content-type,sign-in-with-x,payment-signature");
    expect(res.status).toBe(204);
    expect(await res.text()).toBe("");
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(list(res.headers.get("access-control-allow-methods"))).toEqual(expect.arrayContaining(["get", "post", "delete"]));
    expect(list(res.headers.get("access-control-allow-headers"))).toEqual(
      expect.arrayContaining([
        "authorization",
        "content-type",
        "sign-in-with-x",
        "x-sign-in-with-x",
        "payment-signature",
        "x-payment",
        "x-402-payment",
        "idempotency-key",
      ]),
    );
    expect(Number(res.headers.get("access-control-max-age"))).toBeGreaterThan(0);
    // a preflight is no request: nothing counted against the key or the sender
    expect(emu.account("cors-key")!.entries).toHaveLength(0);
  });

  it("a preflight of the top-up route is answered too, before any payment check", async () => {
    const res = await preflight(`${emu.url}/x402/top-up`, "payment-signature,x-402-payment");
    expect(res.status).toBe(204);
    expect(list(res.headers.get("access-control-allow-headers"))).toEqual(expect.arrayContaining(["payment-signature", "x-402-payment"]));
  });

  it("every answer names the origin rule and exposes the headers the client reads", async () => {
    const res = await fetch(`${emu.url}/chat/completions`, {
      method: "POST",
      headers: { origin: ORIGIN, authorization: "Bearer cors-key", "content-type": "application/json" },
      body: JSON.stringify({ model: "emu-xs", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(200);
    await res.json();
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    const exposed = list(res.headers.get("access-control-expose-headers"));
    expect(exposed).toEqual(
      expect.arrayContaining([
        "date",
        "x-request-id",
        "retry-after",
        "x-ratelimit-limit-requests",
        "x-ratelimit-remaining-requests",
        "x-ratelimit-reset-requests",
        "x-ratelimit-limit-tokens",
        "x-ratelimit-remaining-tokens",
        "x-ratelimit-reset-tokens",
        "x-ratelimit-remaining",
        "x-ratelimit-resets",
        "x-balance-remaining",
        "x-service-balance-usd",
        "x-service-balance-diem",
        "x-service-model-id",
        "x-service-model-deprecation-warning",
        "x-service-version",
        "payment-required",
        "payment-response",
        "x-payment-response",
      ]),
    );
    // every header of this answer that is not CORS-safelisted is exposed (the page reads them all)
    const safelisted = new Set(["cache-control", "content-language", "content-type", "expires", "last-modified", "pragma"]);
    const notExposed: string[] = [];
    res.headers.forEach((_v, name) => {
      if (
        !name.startsWith("access-control-") &&
        !safelisted.has(name) &&
        !["connection", "keep-alive", "vary", "transfer-encoding"].includes(name) &&
        !exposed.includes(name)
      )
        notExposed.push(name);
    });
    expect(notExposed).toEqual([]);
  });

  it("errors carry it too: a 401 and a wallet's 402 are readable by the page", async () => {
    const res = await fetch(`${emu.url}/chat/completions`, {
      method: "POST",
      headers: { origin: ORIGIN, authorization: "Bearer nope" },
      body: "{}",
    });
    expect(res.status).toBe(401);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    const topUp = await fetch(`${emu.url}/x402/top-up`, { method: "POST", headers: { origin: ORIGIN } });
    expect(topUp.status).toBe(402);
    expect(topUp.headers.get("access-control-allow-origin")).toBe("*");
    expect(list(topUp.headers.get("access-control-expose-headers"))).toContain("payment-required");
  });

  it("off by default: no CORS header, and OPTIONS is not a preflight answer", async () => {
    const res = await preflight(`${plain.url}/chat/completions`, "authorization");
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
    expect(res.status).not.toBe(204);
    await res.body?.cancel();
  });

  it("a non-boolean cors option is a ConfigurationError before anything listens", async () => {
    await expect(startEmulator({ cors: "yes" as never })).rejects.toBeInstanceOf(ConfigurationError);
  });

  it("--cors on the command line turns it on", async () => {
    const out: string[] = [];
    const started = await main(["emulator", "--port", "0", "--no-chain", "--cors"], {
      io: { out: (l) => out.push(l), err: () => undefined },
    });
    try {
      const res = await preflight(`${started!.url}/models`, "authorization");
      expect(res.status).toBe(204);
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
    } finally {
      await started?.close();
    }
  });
});

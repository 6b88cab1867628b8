/**
 * The service's answers about one model, typed by the stack (src/http/model-errors.ts): a 503 saying the model
 * is offline is a `ModelOfflineError` sent once (a busy 503 is still retried), a 403 for the model's region or
 * the key's privacy setting a `ModelAccessDeniedError` with its reason, and a 400 refusing a parameter for the
 * model ("<field> is not supported by this model") an `UnsupportedParameterError` naming the field. Over
 * loopback: the emulator in live mode, and a scripted server for the answers it does not give.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import {
  BadRequestError,
  ModelAccessDeniedError,
  ModelOfflineError,
  PermissionDeniedError,
  ServerError,
  ServiceClient,
  UnsupportedParameterError,
  type FetchLike,
} from "../../src/index.js";
import { completion, json, startFixtureServer, type FixtureServer } from "../chat/fixture-server.js";

let emu: Emulator;
let fx: FixtureServer;
beforeAll(async () => {
  [emu, fx] = await Promise.all([startEmulator({ apiKeys: ["k1"] }), startFixtureServer()]);
});
afterAll(async () => {
  await Promise.all([emu?.close(), fx?.close()]);
});

/** A client counting the chat requests that reach the wire. */
function client(baseUrl: string) {
  const sent = { chats: 0 };
  const fetch: FetchLike = async (input, init) => {
    if (String(input instanceof Request ? input.url : input).endsWith("/chat/completions")) sent.chats++;
    return globalThis.fetch(input, init);
  };
  return { sent, client: new ServiceClient({ baseUrl, apiKey: "k1", fetch, retry: { baseDelayMs: 1, maxDelayMs: 2 } }) };
}

const ask = (c: ServiceClient, body: Record<string, unknown>) =>
  c
    .request("/chat/completions", { method: "POST", body: { messages: [{ role: "user", content: "hi" }], ...body } })
    .catch((e: unknown) => e);

describe("a model's offline 503", () => {
  it("is a ModelOfflineError, sent once", async () => {
    const { sent, client: c } = client(emu.url);
    const err = await ask(c, { model: "emu-offline" });
    expect(err).toBeInstanceOf(ModelOfflineError);
    expect(err).toBeInstanceOf(ServerError);
    expect(err).toMatchObject({ status: 503 });
    expect(sent.chats).toBe(1);
  });

  it("a 503 that does not say offline (at capacity) is still retried", async () => {
    let calls = 0;
    fx.script = (_req, res) =>
      ++calls <= 2 ? json(res, { error: "The model is at capacity" }, {}, 503) : json(res, completion({ content: "ok" }));
    const { sent, client: c } = client(fx.url);
    const res = (await ask(c, { model: "fx" })) as { data: any };
    expect(res.data.choices[0].message.content).toBe("ok");
    expect(sent.chats).toBe(3);
  });
});

describe("a model's 403", () => {
  it("for its region (the emulator) is a ModelAccessDeniedError with reason region, not retried", async () => {
    const { sent, client: c } = client(emu.url);
    const err = await ask(c, { model: "emu-regional" });
    expect(err).toBeInstanceOf(ModelAccessDeniedError);
    expect(err).toBeInstanceOf(PermissionDeniedError);
    expect(err).toMatchObject({ status: 403, reason: "region" });
    expect(sent.chats).toBe(1);
  });

  it("for the key's privacy setting has reason privacy; any other 403 stays a PermissionDeniedError", async () => {
    fx.script = (_req, res) => json(res, { error: "This API key's model privacy setting does not allow anonymized models" }, {}, 403);
    expect(await ask(client(fx.url).client, { model: "fx" })).toMatchObject({ name: "ModelAccessDeniedError", reason: "privacy" });
    fx.script = (_req, res) => json(res, { error: "API access is disabled for this account" }, {}, 403);
    const other = await ask(client(fx.url).client, { model: "fx" });
    expect(other).toBeInstanceOf(PermissionDeniedError);
    expect(other).not.toBeInstanceOf(ModelAccessDeniedError);
  });
});

describe("a parameter the model refuses", () => {
  it("is an UnsupportedParameterError naming the field; a capability gate's 400 stays a BadRequestError", async () => {
    const { client: c } = client(emu.url);
    for (const [field, extra] of [
      ["stop", { stop: "END" }],
      ["seed", { seed: 1 }],
      ["n", { n: 3 }],
      ["reasoning_effort", { reasoning_effort: "max" }],
    ] as const) {
      const err = await ask(c, { model: "emu-o-reasoner", ...extra });
      expect(err).toBeInstanceOf(UnsupportedParameterError);
      expect(err).toMatchObject({ status: 400, field });
    }
    const gate = await ask(c, { model: "emu-basic", logprobs: true });
    expect(gate).toBeInstanceOf(BadRequestError);
    expect(gate).not.toBeInstanceOf(UnsupportedParameterError);
  });

  it("read from the message when a body has no issues", async () => {
    fx.script = (_req, res) =>
      json(res, { error: "Unsupported value: presence_penalty is not supported by this model.", request_id: "r1" }, {}, 400);
    expect(await ask(client(fx.url).client, { model: "fx" })).toMatchObject({
      name: "UnsupportedParameterError",
      field: "presence_penalty",
      requestId: "r1",
    });
  });
});

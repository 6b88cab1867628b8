/**
 * Setup of the shared-process project (vitest.config.ts): each test file starts on fresh modules of the client and
 * the emulator, as in a process of its own (the process's default context and store, wallet states and spend
 * records keyed by the local chain's fixed accounts, are never another file's). Only the libraries under
 * node_modules, which Node loads natively and caches, stay loaded from one file to the next.
 */
import { vi } from "vitest";

vi.resetModules();

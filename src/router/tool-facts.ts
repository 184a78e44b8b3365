// What the gateway knows of each upstream's tools, learned from the tools/list pages it relays:
// which are destructive, and each inputSchema, compiled once so tools/call arguments are
// checked at the edge (shared by all sessions: a tool's schema is the upstream's, whoever
// asks). A
// failed check is a tool result with isError (2025-11-25: input validation errors are tool
// execution errors) naming the offending field, so a model can correct itself.
import { Ajv2020 } from 'ajv/dist/2020.js';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { createHash } from 'node:crypto';
import { isObject, type JsonObject } from '../mcp/jsonrpc.js';
import type { Logger } from '../util/log.js';

/** Schemas larger than this are not compiled (and calls to their tools not checked). */
const MAX_SCHEMA_BYTES = 64 * 1024;
const MAX_VALIDATORS = 5_000;
const DRAFT_07 = /^https?:\/\/json-schema\.org\/draft-0[4-7]\/schema#?$/;

interface Compiled {
  fingerprint: string;
  validate: ValidateFunction | undefined;
  destructive: boolean;
}

export class ToolFacts {
  readonly #logger: Logger;
  readonly #draft2020: Ajv2020;
  readonly #draft07: Ajv;
  /** `${upstream}\0${tool}` → the validator of the schema last listed for it. */
  readonly #byTool = new Map<string, Compiled>();

  constructor(logger: Logger) {
    this.#logger = logger;
    const options = { strict: false, allErrors: false, validateSchema: false, addUsedSchema: false } as const;
    this.#draft2020 = new Ajv2020(options);
    this.#draft07 = new Ajv(options);
    addFormats.default(this.#draft2020);
    addFormats.default(this.#draft07);
  }

  /** Learns a page of tools: names, destructiveness, compiled schemas (reused when unchanged). */
  learn(upstream: string, tools: readonly JsonObject[], originals: readonly string[]): void {
    tools.forEach((tool, i) => {
      const name = originals[i]!;
      const schema = isObject(tool.inputSchema) ? tool.inputSchema : {};
      const destructive = isObject(tool.annotations) && tool.annotations.destructiveHint === true;
      const text = JSON.stringify(schema);
      const key = `${upstream}\0${name}`;
      const fingerprint = createHash('sha256').update(text).update(String(destructive)).digest('base64url');
      if (this.#byTool.get(key)?.fingerprint === fingerprint) return;
      let validate: ValidateFunction | undefined;
      if (text.length <= MAX_SCHEMA_BYTES) {
        try {
          const draft07 = typeof schema.$schema === 'string' && DRAFT_07.test(schema.$schema);
          validate = (draft07 ? this.#draft07 : this.#draft2020).compile(schema);
        } catch (err) {
          this.#logger.warn('cannot compile a tool inputSchema; its calls are not checked', { upstream, tool: name, err });
        }
      }
      if (this.#byTool.size >= MAX_VALIDATORS && !this.#byTool.has(key)) this.#byTool.delete(this.#byTool.keys().next().value!);
      this.#byTool.set(key, { fingerprint, validate, destructive });
    });
  }

  destructive(upstream: string, tool: string): boolean {
    return this.#byTool.get(`${upstream}\0${tool}`)?.destructive ?? false;
  }

  /** A message naming what is wrong with `args`, or undefined when they fit (or cannot be checked). */
  check(upstream: string, tool: string, exposedName: string, args: unknown): string | undefined {
    const validate = this.#byTool.get(`${upstream}\0${tool}`)?.validate;
    if (!validate || validate(args ?? {})) return undefined;
    const error = validate.errors?.[0];
    if (!error) return `Invalid arguments for tool ${exposedName}`;
    const missing = error.keyword === 'required' ? (error.params as { missingProperty?: string }).missingProperty : undefined;
    const field = missing !== undefined ? `${error.instancePath}/${missing}` : error.instancePath || '(arguments)';
    const detail = missing !== undefined ? 'is required' : error.message;
    return `Invalid arguments for tool ${exposedName}: ${field} ${detail}`;
  }
}

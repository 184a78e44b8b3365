// What the gateway knows of a tool, learned from the tools/list pages a session reads: whether
// it is destructive, and its inputSchema, so tools/call arguments are checked at the edge. A
// session's facts come only from its own upstream session's lists (a per-session upstream may
// answer sessions differently), and are kept with the session (session.known.tools). Facts are
// interned by content, so sessions that read the same list share one object per tool; schemas
// are compiled lazily, on a tool's first call, and the validators live in a bounded cache keyed
// by the schema's text, never in Ajv (which would otherwise keep every schema it compiled).
// A failed check is a tool result with isError (2025-11-25: input validation errors are tool
// execution errors) naming the offending field, so a model can correct itself. The check is
// never stricter than a server that follows its own schema: defaults count as given (checked on
// a copy, so the arguments forwarded stay the client's), `format` is an annotation (2020-12's
// default; unknown formats too), unknown keywords are ignored, and a schema Ajv cannot compile
// leaves its calls unchecked.
import { Ajv2020 } from 'ajv/dist/2020.js';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { LRUCache } from 'lru-cache';
import { isObject, type JsonObject } from '../mcp/jsonrpc.js';
import type { ToolFact } from '../session/session.js';
import { hintsOf } from '../policy/policy.js';
import type { Logger } from '../util/log.js';
import { paramHeadersOf, type ParamHeader } from '../mcp/param-headers.js';

const NO_PARAMS: readonly ParamHeader[] = [];

/** Schemas larger than this are not compiled (and calls to their tools not checked). */
export const MAX_SCHEMA_BYTES = 64 * 1024;
/** Distinct facts interned (a fact dropped here stays alive where a session still holds it). */
const MAX_FACTS = 50_000;
const MAX_FACT_BYTES = 64 * 1024 * 1024;
/** Compiled validators kept, by fact key (a dropped one is compiled again on the next call). */
const MAX_VALIDATORS = 2_000;
const DRAFT_07 = /^https?:\/\/json-schema\.org\/draft-0[4-7]\/schema#?$/;

/** A schema that could not be compiled: its calls go unchecked. */
const UNCHECKED = Symbol('unchecked');

/** A compiled schema, and whether it fills in defaults (it then checks a copy of the arguments). */
interface Validator {
  validate: ValidateFunction;
  fillsDefaults: boolean;
}

export class ToolFacts {
  readonly #logger: Logger;
  readonly #draft2020: Ajv2020;
  readonly #draft07: Ajv;
  /** Interned facts by content (destructiveness and schema text). */
  readonly #facts = new LRUCache<string, ToolFact>({ max: MAX_FACTS, maxSize: MAX_FACT_BYTES, sizeCalculation: (fact) => fact.key.length + 64 });
  /** By fact key (destructiveness and schema text). */
  readonly #validators = new LRUCache<string, Validator | typeof UNCHECKED>({ max: MAX_VALIDATORS });
  readonly #oncompile: (() => void) | undefined;
  /** Mirrored parameters by fact (facts are interned: one entry per distinct schema). */
  readonly #params = new WeakMap<ToolFact, readonly ParamHeader[] | string>();

  constructor(logger: Logger, oncompile?: () => void) {
    this.#logger = logger;
    this.#oncompile = oncompile;
    // useDefaults: a property the schema gives a default counts as given (the server fills it in);
    // validateFormats off: `format` is an annotation unless a server asserts it, and an unknown
    // format is no reason to refuse; strict off: unknown keywords are ignored.
    const options = { strict: false, allErrors: false, validateSchema: false, addUsedSchema: false, useDefaults: true, validateFormats: false, logger: false } as const;
    this.#draft2020 = new Ajv2020(options);
    this.#draft07 = new Ajv(options);
    addFormats.default(this.#draft2020);
    addFormats.default(this.#draft07);
  }

  /** The fact of one listed tool: cheap (no compilation), and the same object for the same content. */
  fact(tool: JsonObject): ToolFact {
    const schema = isObject(tool.inputSchema) ? tool.inputSchema : {};
    const hints = hintsOf(tool);
    const destructive = hints.includes('destructiveHint');
    const text = JSON.stringify(schema);
    const key = `${hints.join(',')}|${text}`;
    const known = this.#facts.get(key);
    if (known) return known;
    const fact: ToolFact = { key, schema: text.length <= MAX_SCHEMA_BYTES ? schema : undefined, destructive, hints };
    this.#facts.set(key, fact);
    return fact;
  }

  /**
   * The parameters a tool mirrors into Mcp-Param-* headers (2026-07-28 x-mcp-header), from its
   * upstream schema: none, or why its annotations break the rules (its calls are then refused
   * rather than sent without the headers its server requires). Worked out once per fact.
   */
  paramHeaders(fact: ToolFact | undefined): readonly ParamHeader[] | string {
    if (!fact?.schema) return NO_PARAMS;
    let params = this.#params.get(fact);
    if (params === undefined) {
      params = paramHeadersOf(fact.schema);
      this.#params.set(fact, params);
    }
    return params;
  }

  /** A message naming what is wrong with `args`, or undefined when they fit (or cannot be checked). */
  check(fact: ToolFact | undefined, exposedName: string, args: unknown): string | undefined {
    const validator = fact && this.#validator(fact);
    if (!validator) return undefined;
    const { validate } = validator;
    // Ajv writes the defaults into what it checks: a copy, so what is forwarded is the client's own.
    if (validate(validator.fillsDefaults ? structuredClone(args ?? {}) : (args ?? {}))) return undefined;
    const error = validate.errors?.[0];
    if (!error) return `Invalid arguments for tool ${exposedName}`;
    const missing = error.keyword === 'required' ? (error.params as { missingProperty?: string }).missingProperty : undefined;
    const field = missing !== undefined ? `${error.instancePath}/${missing}` : error.instancePath || '(arguments)';
    const detail = missing !== undefined ? 'is required' : error.message;
    return `Invalid arguments for tool ${exposedName}: ${field} ${detail}`;
  }

  #validator(fact: ToolFact): Validator | undefined {
    const { schema } = fact;
    if (!schema) return undefined;
    // By the fact's own key (its hash is kept with the string): no new string on every call.
    const cached = this.#validators.get(fact.key);
    if (cached !== undefined) return cached === UNCHECKED ? undefined : cached;
    const ajv = typeof schema.$schema === 'string' && DRAFT_07.test(schema.$schema) ? this.#draft07 : this.#draft2020;
    let validate: Validator | typeof UNCHECKED = UNCHECKED;
    try {
      this.#oncompile?.();
      validate = { validate: ajv.compile(schema), fillsDefaults: fact.key.includes('"default":') };
    } catch (err) {
      this.#logger.warn('cannot compile a tool inputSchema; its calls are not checked', { err });
    } finally {
      // Ajv caches every schema object it compiled; the validator is all that is needed.
      ajv.removeSchema(schema);
    }
    this.#validators.set(fact.key, validate);
    return validate === UNCHECKED ? undefined : validate;
  }
}

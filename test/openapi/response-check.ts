// Checks real responses against the served OpenAPI 3.0 document: the operation must be
// documented, the status must be one of its responses, and the JSON body must match the
// schema. Runs in workerd and Node alike (@cfworker/json-schema needs no eval).
import { Validator } from '@cfworker/json-schema';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };
/** A parsed OpenAPI document (as served at /openapi.json). */
export type OpenApiDocument = JsonObject;

interface Operation {
  pattern: RegExp;
  method: string;
  responses: JsonObject;
}

export class OpenApiResponseChecker {
  readonly #operations: Operation[] = [];
  readonly #components: JsonObject;
  readonly #validators = new Map<string, Validator>();

  constructor(document: JsonObject) {
    this.#components = ((document.components as JsonObject | undefined)?.schemas ?? {}) as JsonObject;
    for (const [path, item] of Object.entries((document.paths ?? {}) as JsonObject)) {
      const pattern = new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`);
      for (const [method, operation] of Object.entries(item as JsonObject)) {
        this.#operations.push({
          pattern,
          method: method.toUpperCase(),
          responses: (operation as JsonObject).responses as JsonObject,
        });
      }
    }
  }

  /** Problems with this response, or [] when it matches the document. Undocumented paths are skipped. */
  problems(
    method: string,
    path: string,
    status: number,
    contentType: string | null,
    body: unknown,
  ): string[] {
    const operation = this.#operations.find(
      (candidate) => candidate.method === method && candidate.pattern.test(path),
    );
    if (!operation) return [];
    const response = (operation.responses[String(status)] ?? operation.responses.default) as
      | JsonObject
      | undefined;
    if (!response) return [`${method} ${path}: status ${status} is not documented`];
    const content = response.content as JsonObject | undefined;
    if (!content) return [];
    const mediaType = (contentType ?? '').split(';')[0]?.trim() ?? '';
    const media = content[mediaType] as JsonObject | undefined;
    if (!media)
      return [`${method} ${path} ${status}: content type ${mediaType || '(none)'} is not documented`];
    if (mediaType !== 'application/json' || !media.schema) return [];
    const key = `${method} ${operation.pattern.source} ${status}`;
    let validator = this.#validators.get(key);
    if (!validator) {
      validator = new Validator(
        this.#toJsonSchema(media.schema) as Record<string, unknown>,
        '2020-12',
        false,
      );
      this.#validators.set(key, validator);
    }
    const result = validator.validate(body);
    return result.valid
      ? []
      : result.errors
          .slice(0, 5)
          .map((error) => `${method} ${path} ${status}: ${error.instanceLocation} ${error.error}`);
  }

  /** OpenAPI 3.0 schema → JSON Schema: references inlined, `nullable` as a null alternative. */
  #toJsonSchema(schema: Json, depth = 0): Json {
    if (depth > 50) throw new Error('schema nesting too deep');
    if (Array.isArray(schema)) return schema.map((item) => this.#toJsonSchema(item, depth + 1));
    if (schema === null || typeof schema !== 'object') return schema;
    const ref = schema.$ref;
    if (typeof ref === 'string') {
      const name = ref.replace('#/components/schemas/', '');
      const target = this.#components[name];
      if (target === undefined) throw new Error(`unresolved reference ${ref}`);
      return this.#toJsonSchema(target, depth + 1);
    }
    const { nullable, example: _example, ...rest } = schema;
    const converted: JsonObject = {};
    for (const [key, value] of Object.entries(rest)) {
      converted[key] = key === 'enum' || key === 'required' ? value : this.#toJsonSchema(value, depth + 1);
    }
    return nullable === true ? { anyOf: [converted, { type: 'null' }] } : converted;
  }
}

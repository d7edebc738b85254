/** @jsxImportSource hono/jsx */
// GET /docs: the API reference, rendered on the server from the same OpenAPI document that
// /openapi.json serves, so it cannot drift from the routes that run. Plain HTML (headings,
// tables, links) under the dashboard's stylesheet and CSP: it works without JavaScript and
// offline, and a screen reader or the keyboard gets a document, not a widget tree.
import type { OpenAPIHono } from '@hono/zod-openapi';
import { html, raw } from 'hono/html';
import type { Child } from 'hono/jsx';
import { Marked, type Tokens } from 'marked';
import type { AppEnv } from '../app-env.ts';
import { securityHeaders } from '../middleware/security-headers.ts';
import { Layout } from './dashboard/layout.tsx';

// The parts of an OpenAPI 3.0 document (spec.openapis.org/oas/v3.0.3) the page shows.
interface Reference {
  $ref: string;
}
interface SchemaObject {
  type?: string;
  format?: string;
  description?: string;
  nullable?: boolean;
  enum?: unknown[];
  default?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  additionalProperties?: boolean | Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
}
type Schema = SchemaObject | Reference;
interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  description?: string;
  schema?: Schema;
}
interface MediaType {
  schema?: Schema;
}
interface Response {
  description?: string;
  headers?: Record<string, { description?: string; schema?: Schema }>;
  content?: Record<string, MediaType>;
}
interface Operation {
  tags?: string[];
  summary?: string;
  description?: string;
  parameters?: (Parameter | Reference)[];
  requestBody?: { required?: boolean; description?: string; content?: Record<string, MediaType> };
  responses?: Record<string, Response>;
}
export interface ApiDocument {
  info: { title: string; version: string; description?: string };
  components?: {
    schemas?: Record<string, Schema>;
    parameters?: Record<string, Parameter>;
    securitySchemes?: Record<string, { type: string; in?: string; name?: string; description?: string }>;
  };
  paths: Record<string, Record<string, Operation>>;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;
const SCHEMA_REF = '#/components/schemas/';

// Descriptions are Markdown (inline code, paragraphs, tables). Raw HTML in them is shown as
// text, never interpreted.
const markdown = new Marked({
  async: false,
  gfm: true,
  renderer: {
    html: ({ text }: Tokens.HTML | Tokens.Tag) => escapeHtml(text),
    table(token: Tokens.Table) {
      const cells = (row: Tokens.TableCell[], tag: 'th' | 'td') =>
        row
          .map(
            (cell) =>
              `<${tag}${tag === 'th' ? ' scope="col"' : ''}>${this.parser.parseInline(cell.tokens)}</${tag}>`,
          )
          .join('');
      const body = token.rows.map((row) => `<tr>${cells(row, 'td')}</tr>`).join('');
      return `<section class="table-scroll" aria-label="Table" tabindex="0"><table class="data-table"><thead><tr>${cells(token.header, 'th')}</tr></thead><tbody>${body}</tbody></table></section>`;
    },
  },
});

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function Markdown(props: { text: string | undefined }) {
  if (!props.text) return null;
  return <div class="prose">{raw(markdown.parse(props.text) as string)}</div>;
}

function isReference(value: unknown): value is Reference {
  return typeof value === 'object' && value !== null && '$ref' in value;
}

/** The anchor of an operation: `post-api-v1-verify`. */
export function operationId(method: string, path: string): string {
  return `${method}-${path}`.replace(/[^A-Za-z0-9]+/g, '-').replace(/-+$/, '');
}

function schemaAnchor(name: string): string {
  return `schema-${name}`;
}

function refName(reference: Reference): string {
  return reference.$ref.startsWith(SCHEMA_REF) ? reference.$ref.slice(SCHEMA_REF.length) : reference.$ref;
}

/** A schema's type in a word or two, with a link where it names another schema. */
function TypeOf(props: { schema: Schema | undefined }) {
  const { schema } = props;
  if (!schema) return <>any</>;
  if (isReference(schema)) {
    const name = refName(schema);
    return <a href={`#${schemaAnchor(name)}`}>{name}</a>;
  }
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants) {
    return (
      <>
        {variants.map((variant, index) => (
          <>
            {index > 0 ? ' or ' : ''}
            <TypeOf schema={variant} />
          </>
        ))}
      </>
    );
  }
  if (schema.allOf?.length === 1) return <TypeOf schema={schema.allOf[0]} />;
  const base =
    schema.type === 'array' ? (
      <>
        array of <TypeOf schema={schema.items} />
      </>
    ) : schema.format ? (
      `${schema.type ?? 'any'} (${schema.format})`
    ) : (
      (schema.type ?? 'any')
    );
  return schema.nullable ? <>{base} or null</> : base;
}

/** Bounds, allowed values and defaults in words. */
function constraintsOf(schema: Schema | undefined): string[] {
  if (!schema || isReference(schema)) return [];
  const notes: string[] = [];
  if (schema.enum) notes.push(`one of ${schema.enum.map((value) => `\`${String(value)}\``).join(', ')}`);
  const range = (min: number | undefined, max: number | undefined, unit: string) => {
    if (min !== undefined && max !== undefined) notes.push(`${min} to ${max}${unit}`);
    else if (min !== undefined) notes.push(`at least ${min}${unit}`);
    else if (max !== undefined) notes.push(`at most ${max}${unit}`);
  };
  range(schema.minimum, schema.maximum, '');
  range(schema.minLength, schema.maxLength, ' characters');
  range(schema.minItems, schema.maxItems, ' items');
  if (schema.default !== undefined) notes.push(`default \`${JSON.stringify(schema.default)}\``);
  return notes;
}

interface FieldRow {
  name: string;
  schema: Schema | undefined;
  required: boolean;
}

/**
 * The fields of a schema as rows, nested objects and arrays of objects flattened into dotted
 * names (`checks.hasTypo`, `results[].email`). A named schema is linked, not expanded.
 */
function fieldRows(schema: Schema | undefined, prefix = '', depth = 0): FieldRow[] {
  if (!schema || isReference(schema) || depth > 4) return [];
  if (schema.type === 'array' && schema.items && !isReference(schema.items)) {
    return fieldRows(schema.items, `${prefix}[]`, depth + 1);
  }
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties ?? {}).flatMap(([name, field]) => {
    const path = prefix ? `${prefix}.${name}` : name;
    return [
      { name: path, schema: field, required: required.has(name) },
      ...fieldRows(field, path, depth + 1),
    ];
  });
}

/** A table that may be wider than a phone: a named region the keyboard can scroll (WCAG 2.1.1). */
function Scroller(props: { label: string; children?: Child }) {
  return (
    <section class="table-scroll" aria-label={props.label} tabindex={0}>
      {props.children}
    </section>
  );
}

/**
 * The fields of a body or a named schema. A body that is a named schema shows that schema's
 * fields here, with a link to it; a schema without fields shows its type.
 */
function FieldsTable(props: {
  caption: string;
  schema: Schema | undefined;
  schemas?: Record<string, Schema>;
}) {
  const { schema } = props;
  const named = isReference(schema) ? refName(schema) : null;
  const resolved = named ? props.schemas?.[named] : schema;
  const rows = fieldRows(resolved);
  if (rows.length === 0) {
    return (
      <p>
        {props.caption}: <TypeOf schema={schema} />
      </p>
    );
  }
  const caption = named ? (
    <>
      {props.caption}: <TypeOf schema={schema} />
    </>
  ) : (
    props.caption
  );
  return (
    <ReferenceTable
      label={named ? `${props.caption}: ${named}` : props.caption}
      caption={caption}
      columns={['Field', 'Type', 'Required', 'Description']}
      rows={rows.map((row) => ({
        name: row.name,
        cells: [
          <TypeOf schema={row.schema} />,
          row.required ? 'yes' : 'no',
          <Markdown text={describe(row.schema)} />,
        ],
      }))}
    />
  );
}

/** A schema's description followed by its constraints. */
function describe(schema: Schema | undefined): string | undefined {
  const description = schema && !isReference(schema) ? schema.description : undefined;
  const notes = constraintsOf(schema);
  if (notes.length === 0) return description;
  const constraints = `${notes.join('; ')}.`;
  return description
    ? `${description} (${notes.join('; ')})`
    : constraints.charAt(0).toUpperCase() + constraints.slice(1);
}

function ParametersTable(props: { parameters: Parameter[] }) {
  if (props.parameters.length === 0) return null;
  return (
    <ReferenceTable
      label="Parameters"
      caption="Parameters"
      columns={['Name', 'In', 'Type', 'Required', 'Description']}
      rows={props.parameters.map((parameter) => ({
        name: parameter.name,
        cells: [
          parameter.in,
          <TypeOf schema={parameter.schema} />,
          parameter.required ? 'yes' : 'no',
          <Markdown text={parameter.description ?? describe(parameter.schema)} />,
        ],
      }))}
    />
  );
}

/** A table of named things (fields, parameters): the name heads its row, in code. */
function ReferenceTable(props: {
  label: string;
  caption: Child;
  columns: string[];
  rows: { name: string; cells: Child[] }[];
}) {
  return (
    <Scroller label={props.label}>
      <table class="data-table">
        <caption>{props.caption}</caption>
        <thead>
          <tr>
            {props.columns.map((column) => (
              <th scope="col">{column}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.rows.map((row) => (
            <tr>
              <th scope="row">
                <code>{row.name}</code>
              </th>
              {row.cells.map((cell) => (
                <td>{cell}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </Scroller>
  );
}

function OperationSection(props: {
  method: string;
  path: string;
  operation: Operation;
  document: ApiDocument;
}) {
  const { method, path, operation, document } = props;
  const parameters = (operation.parameters ?? []).flatMap((parameter) => {
    if (!isReference(parameter)) return [parameter];
    const name = parameter.$ref.split('/').pop() ?? '';
    const found = document.components?.parameters?.[name];
    return found ? [found] : [];
  });
  const id = operationId(method, path);
  return (
    <section class="card api-operation" id={id} aria-labelledby={`${id}-title`}>
      <h3 id={`${id}-title`}>
        <span class={`http-method http-method-${method}`}>{method.toUpperCase()}</span> <code>{path}</code>
      </h3>
      {operation.summary ? <p class="operation-summary">{operation.summary}</p> : null}
      <Markdown text={operation.description} />
      <ParametersTable parameters={parameters} />
      {operation.requestBody?.content
        ? Object.entries(operation.requestBody.content).map(([type, media]) => (
            <FieldsTable
              caption={`Request body (${type})`}
              schema={media.schema}
              schemas={document.components?.schemas}
            />
          ))
        : null}
      <h4>Responses</h4>
      <dl class="api-responses">
        {Object.entries(operation.responses ?? {}).map(([status, response]) => (
          <>
            <dt>
              <code>{status}</code>
            </dt>
            <dd>
              <Markdown text={response.description} />
              {Object.entries(response.content ?? {}).map(([type, media]) => (
                <p>
                  Body ({type}): <TypeOf schema={media.schema} />
                </p>
              ))}
            </dd>
          </>
        ))}
      </dl>
    </section>
  );
}

function operationsByTag(
  document: ApiDocument,
): Map<string, { method: string; path: string; operation: Operation }[]> {
  const groups = new Map<string, { method: string; path: string; operation: Operation }[]>();
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of METHODS) {
      const operation = item[method];
      if (!operation) continue;
      const tag = operation.tags?.[0] ?? 'Other';
      groups.set(tag, [...(groups.get(tag) ?? []), { method, path, operation }]);
    }
  }
  return groups;
}

export function ApiReferencePage(props: { document: ApiDocument }) {
  const { document } = props;
  const groups = operationsByTag(document);
  const schemas = Object.entries(document.components?.schemas ?? {});
  const security = Object.entries(document.components?.securitySchemes ?? {});
  return (
    <Layout
      title={`${document.info.title} reference`}
      signedIn={false}
      csrfToken=""
      brandTail="API reference"
      script={false}
    >
      <div class="api-reference">
        <h1>{document.info.title}</h1>
        <p class="muted">
          Version {document.info.version} · machine-readable: <a href="/openapi.json">/openapi.json</a>{' '}
          (OpenAPI 3.0.3)
        </p>
        <Markdown text={document.info.description} />
        <nav aria-labelledby="contents-title" class="card">
          <h2 id="contents-title">Contents</h2>
          <ul class="link-list">
            {[...groups].map(([tag, operations]) => (
              <li>
                {tag}
                <ul>
                  {operations.map(({ method, path, operation }) => (
                    <li>
                      <a href={`#${operationId(method, path)}`}>
                        {method.toUpperCase()} <code>{path}</code>
                      </a>
                      {operation.summary ? ` — ${operation.summary}` : ''}
                    </li>
                  ))}
                </ul>
              </li>
            ))}
            <li>
              <a href="#schemas">Schemas</a>
            </li>
          </ul>
        </nav>
        <section aria-labelledby="authentication">
          <h2 id="authentication">Authentication</h2>
          {security.map(([name, scheme]) => (
            <div>
              <p>
                <strong>{name}</strong>: {scheme.type}
                {scheme.in && scheme.name ? (
                  <>
                    {' '}
                    in the {scheme.in} <code>{scheme.name}</code>
                  </>
                ) : null}
                .
              </p>
              <Markdown text={scheme.description} />
            </div>
          ))}
        </section>
        {[...groups].map(([tag, operations]) => (
          <section aria-labelledby={`tag-${tag}`}>
            <h2 id={`tag-${tag}`}>{tag}</h2>
            {operations.map(({ method, path, operation }) => (
              <OperationSection method={method} path={path} operation={operation} document={document} />
            ))}
          </section>
        ))}
        <section aria-labelledby="schemas">
          <h2 id="schemas">Schemas</h2>
          {schemas.map(([name, schema]) => (
            <section class="card" id={schemaAnchor(name)} aria-labelledby={`${schemaAnchor(name)}-title`}>
              <h3 id={`${schemaAnchor(name)}-title`}>{name}</h3>
              <Markdown text={isReference(schema) ? undefined : schema.description} />
              <FieldsTable caption={`Fields of ${name}`} schema={schema} />
            </section>
          ))}
        </section>
      </div>
    </Layout>
  );
}

/** The whole page for `document`, as HTML. */
export async function renderReference(document: ApiDocument): Promise<string> {
  return (await html`<!DOCTYPE html>${<ApiReferencePage document={document} />}`).toString();
}

/** Serves /docs from the document that `app.doc(…, config)` serves as /openapi.json. */
export function registerApiReference(
  app: OpenAPIHono<AppEnv>,
  config: Parameters<OpenAPIHono<AppEnv>['getOpenAPIDocument']>[0],
): void {
  // The document is the same for every request of an isolate: render it once. Its generated
  // type (openapi3-ts) is wider than what the page reads; ApiDocument names that part.
  let page: string | null = null;
  app.get('/docs', securityHeaders, async (c) => {
    page ??= await renderReference(app.getOpenAPIDocument(config) as unknown as ApiDocument);
    return c.html(page);
  });
}

// The reference page's rendering of an OpenAPI document: Markdown in descriptions becomes HTML,
// raw HTML in them stays text, and nested fields are listed by their dotted path.
import { describe, expect, it } from 'vitest';
import { type ApiDocument, operationId, renderReference } from './api-reference.tsx';

const DOCUMENT: ApiDocument = {
  info: {
    title: 'Test API',
    version: '1.2.3',
    description: 'Send `X-API-Key`. <img src=x onerror=alert(1)>',
  },
  components: {
    schemas: {
      Thing: {
        type: 'object',
        required: ['name'],
        properties: {
          name: { type: 'string', minLength: 1, maxLength: 20, description: 'Its **name**.' },
          checks: {
            type: 'object',
            properties: { valid: { type: 'boolean', nullable: true } },
          },
          tags: { type: 'array', items: { type: 'string', enum: ['a', 'b'] } },
        },
      },
    },
  },
  paths: {
    '/things/{id}': {
      get: {
        tags: ['Things'],
        summary: 'Read a thing',
        description: '| a | b |\n| --- | --- |\n| `1` | <b>2</b> |',
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        responses: {
          '200': {
            description: 'The thing.',
            content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } },
          },
        },
      },
    },
  },
};

describe('the API reference page', () => {
  it('renders Markdown and keeps raw HTML as text', async () => {
    const page = await renderReference(DOCUMENT);
    expect(page).toContain('Send <code>X-API-Key</code>.');
    expect(page).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(page).not.toContain('<img');
    expect(page).toContain('<strong>name</strong>');
    // A description table is a scrollable, named region with header cells.
    expect(page).toMatch(
      /<section class="table-scroll" aria-label="Table" tabindex="0"><table class="data-table"><thead><tr><th scope="col">a<\/th>/,
    );
    expect(page).toContain('<td><code>1</code></td><td>&lt;b&gt;2&lt;/b&gt;</td>');
  });

  it('lists each operation under its tag with an anchor, and each schema with its fields', async () => {
    const page = await renderReference(DOCUMENT);
    const anchor = operationId('get', '/things/{id}');
    expect(anchor).toBe('get-things-id');
    expect(page).toContain(`<a href="#${anchor}">GET <code>/things/{id}</code></a> — Read a thing`);
    expect(page).toContain(`<section class="card api-operation" id="${anchor}"`);
    expect(page).toContain('<a href="#schema-Thing">Thing</a>');
    for (const field of ['name', 'checks', 'checks.valid', 'tags']) {
      expect(page).toContain(`<th scope="row"><code>${field}</code></th>`);
    }
    expect(page).toContain('boolean or null');
    expect(page).toContain('array of string');
    expect(page).toContain('1 to 20 characters');
  });
});

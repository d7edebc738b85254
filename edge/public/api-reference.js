// Starts Swagger UI on /docs (its bundle is loaded just before this file, from this origin).
// A file rather than an inline script, so the page's CSP can forbid inline script.
(() => {
  const root = document.getElementById('api-reference');
  window.SwaggerUIBundle({
    url: root.dataset.openapiUrl,
    domNode: root,
    deepLinking: true,
    // No badge from the public validator service: the page makes no request to another origin.
    validatorUrl: null,
  });
})();

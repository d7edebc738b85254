// rcpt dashboard: progressive enhancement only. Every page works without this file; with it,
// secrets get a copy button, the bulk upload gets a preview and a cost before it starts,
// and a running job's page updates itself every second instead of reloading.

(() => {
  const JOB_POLL_MS = 1000;
  // A running job's rows and pending addresses are drawn again at least this often (their retry
  // times pass even when no verdict arrives).
  const LIVE_REFRESH_MS = 10_000;
  const PREVIEW_ROWS = 5;

  function element(tag, attributes, children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value !== undefined && value !== null && value !== false)
        node.setAttribute(name, value === true ? '' : String(value));
    }
    for (const child of children || [])
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    return node;
  }

  // ── Copy buttons for secrets shown once ──────────────────────────────────────────────
  function enhanceCopyButtons() {
    for (const button of document.querySelectorAll('[data-copy-target]')) {
      const input = document.getElementById(button.getAttribute('data-copy-target'));
      if (!input) continue;
      button.hidden = false;
      // A focused button's new label is not reliably read out: say the outcome in a live region.
      const announcer = element('span', { class: 'visually-hidden', role: 'status', 'data-copy-status': '' });
      button.after(announcer);
      button.addEventListener('click', async () => {
        input.select();
        let copied = false;
        try {
          await navigator.clipboard.writeText(input.value);
          copied = true;
        } catch {
          copied = document.execCommand?.('copy') ?? false;
        }
        button.textContent = copied ? 'Copied' : 'Press Ctrl+C to copy';
        announcer.textContent = copied ? 'Copied to the clipboard.' : 'Not copied: press Ctrl+C to copy.';
      });
    }
    for (const hint of document.querySelectorAll('.js-only')) hint.hidden = false;
  }

  // ── Busy state for slow forms (a single verification takes about a second) ──────────
  function enhanceBusyForms() {
    for (const form of document.querySelectorAll('form[data-busy-label]')) {
      form.addEventListener('submit', () => {
        const button = form.querySelector('button[type="submit"]');
        if (!button) return;
        button.textContent = form.getAttribute('data-busy-label');
        button.setAttribute('aria-disabled', 'true');
        form.setAttribute('aria-busy', 'true');
      });
    }
  }

  // ── Bulk upload: local preview of the first rows, column choice, server counts ───────
  /** The first `limit` records of a CSV text; quotes respected, delimiter as the server picks it. */
  function parseCsvHead(text, limit) {
    const firstLine = text.split(/\r?\n/, 1)[0] || '';
    let delimiter = ',';
    let best = -1;
    for (const candidate of [',', ';', '\t']) {
      let count = 0;
      let quoted = false;
      for (const character of firstLine) {
        if (character === '"') quoted = !quoted;
        else if (!quoted && character === candidate) count++;
      }
      if (count > best) {
        best = count;
        delimiter = candidate;
      }
    }
    const records = [];
    let record = [];
    let cell = '';
    let quoted = false;
    for (let index = 0; index < text.length && records.length < limit; index++) {
      const character = text[index];
      if (quoted) {
        if (character === '"' && text[index + 1] === '"') {
          cell += '"';
          index++;
        } else if (character === '"') quoted = false;
        else cell += character;
      } else if (character === '"') quoted = true;
      else if (character === delimiter) {
        record.push(cell);
        cell = '';
      } else if (character === '\n' || character === '\r') {
        if (character === '\r' && text[index + 1] === '\n') index++;
        record.push(cell);
        if (record.some((value) => value.trim() !== '')) records.push(record);
        record = [];
        cell = '';
      } else cell += character;
    }
    if (records.length < limit && (cell !== '' || record.length > 0)) {
      record.push(cell);
      if (record.some((value) => value.trim() !== '')) records.push(record);
    }
    return records;
  }

  function enhanceBulkForm(form) {
    const fileInput = form.querySelector('input[type="file"]');
    const columnInput = form.querySelector('input[name="emailColumn"]');
    const columnField = columnInput ? columnInput.closest('.field') : null;
    const preview = form.querySelector('[data-preview]');
    const submit = form.querySelector('button[type="submit"]');
    const dropzone = form.querySelector('[data-dropzone]');
    const previewUrl = form.getAttribute('data-bulk-preview');
    if (!fileInput || !preview || !submit || !previewUrl) return;
    let localRows = [];
    let request = 0;

    if (dropzone) {
      for (const type of ['dragenter', 'dragover']) {
        dropzone.addEventListener(type, (event) => {
          event.preventDefault();
          dropzone.classList.add('dropzone-active');
        });
      }
      for (const type of ['dragleave', 'drop']) {
        dropzone.addEventListener(type, () => dropzone.classList.remove('dropzone-active'));
      }
      dropzone.addEventListener('drop', (event) => {
        event.preventDefault();
        if (!event.dataTransfer || event.dataTransfer.files.length === 0) return;
        fileInput.files = event.dataTransfer.files;
        fileInput.dispatchEvent(new Event('change', { bubbles: true }));
      });
    }

    fileInput.addEventListener('change', async () => {
      const file = fileInput.files?.[0];
      if (!file) {
        preview.hidden = true;
        return;
      }
      localRows = parseCsvHead(await file.slice(0, 64 * 1024).text(), PREVIEW_ROWS + 1);
      if (columnInput) columnInput.value = '';
      await refresh();
    });

    async function refresh() {
      const mine = ++request;
      submit.disabled = true;
      preview.hidden = false;
      preview.replaceChildren(element('p', { class: 'muted' }, ['Reading the file…']));
      let answer;
      try {
        const response = await fetch(previewUrl, {
          method: 'POST',
          body: new FormData(form),
          credentials: 'same-origin',
        });
        answer = await response.json();
      } catch {
        answer = {
          success: false,
          message: 'The preview could not be loaded; you can still upload the file.',
        };
      }
      if (mine !== request) return; // a newer choice is on its way
      if (!answer.success) {
        preview.replaceChildren(
          element('p', { class: 'notice notice-error', role: 'alert' }, [answer.message]),
        );
        submit.disabled = false;
        return;
      }
      renderPreview(answer.preview);
    }

    function renderPreview(counts) {
      const headers = counts.headers || [];
      const hasHeader =
        localRows.length > 0 &&
        headers.length > 0 &&
        headers.some((name, index) => (localRows[0][index] || '').trim() === name);
      const dataRows = (hasHeader ? localRows.slice(1) : localRows).slice(0, PREVIEW_ROWS);

      const select = element('select', { id: 'bulk-preview-column' });
      headers.forEach((name, index) => {
        select.append(
          element('option', { value: String(index), selected: index === counts.emailColumn }, [name]),
        );
      });
      select.addEventListener('change', () => {
        if (columnInput) columnInput.value = select.value;
        refresh();
      });
      if (columnField) columnField.hidden = true;

      const table = element('table', { class: 'data-table preview-table' }, [
        element('caption', {}, [`First ${dataRows.length} rows of the file`]),
        element('thead', {}, [
          element(
            'tr',
            {},
            headers.map((name, index) =>
              element(
                'th',
                { scope: 'col', class: index === counts.emailColumn ? 'email-column' : undefined },
                [name],
              ),
            ),
          ),
        ]),
        element(
          'tbody',
          {},
          dataRows.map((row) =>
            element(
              'tr',
              {},
              headers.map((_, index) =>
                element('td', { class: index === counts.emailColumn ? 'email-column' : undefined }, [
                  row[index] || '',
                ]),
              ),
            ),
          ),
        ),
      ]);

      const facts = [
        ['Rows', counts.totalRows, 'rows'],
        ['Unique addresses to verify', counts.totalEmails, 'unique'],
        ['Duplicates (free)', counts.duplicateCount, 'duplicates'],
        ['Empty rows (free)', counts.emptyRows, 'empty'],
        ['Invalid rows (free)', counts.invalidRows, 'invalid'],
        ['Credits needed', counts.creditsRequired, 'cost'],
        ['Credits available', counts.creditsAvailable, 'available'],
      ];
      const list = element(
        'dl',
        { class: 'counts' },
        facts.map(([label, value, key]) =>
          element('div', { class: 'count' }, [
            element('dt', {}, [label]),
            element('dd', { 'data-preview-count': key }, [String(value)]),
          ]),
        ),
      );

      const affordable = counts.creditsRequired <= counts.creditsAvailable;
      const children = [
        element('h2', {}, ['Preview']),
        element('div', { class: 'field' }, [
          element('label', { for: 'bulk-preview-column' }, ['Email column']),
          select,
        ]),
        // A wide file scrolls sideways on a phone: the region takes the focus so that the
        // keyboard can scroll it too (WCAG 2.1.1; axe's scrollable-region-focusable).
        element(
          'div',
          { class: 'table-scroll', role: 'region', 'aria-label': 'First rows of the file', tabindex: '0' },
          [table],
        ),
        list,
      ];
      if (!affordable) {
        children.push(
          element('p', { class: 'notice notice-error', role: 'alert' }, [
            `This list needs ${counts.creditsRequired} credits; you have ${counts.creditsAvailable}.`,
          ]),
        );
      }
      // A column without a single address (the wrong one picked) has nothing to verify.
      const noAddresses = counts.totalEmails === 0;
      if (noAddresses) {
        const column = headers[counts.emailColumn] || 'this column';
        children.push(
          element('p', { class: 'notice notice-error', role: 'alert', 'data-preview-empty': '' }, [
            `The column “${column}” holds no email addresses: pick the column that does.`,
          ]),
        );
      }
      preview.replaceChildren(...children);
      submit.disabled = !affordable || noAddresses;
      submit.textContent = noAddresses
        ? 'No addresses to verify'
        : `Confirm: verify ${counts.totalEmails} address${counts.totalEmails === 1 ? '' : 'es'} for ${counts.creditsRequired} credit${counts.creditsRequired === 1 ? '' : 's'}`;
    }
  }

  // ── Job page: live progress ──────────────────────────────────────────────────────────
  function enhanceJobPage(root) {
    const url = root.getAttribute('data-job-status-url');
    let delay = JOB_POLL_MS;
    let processed = null;
    let liveAt = Date.now();
    const running = (status) => status === 'pending' || status === 'processing';
    if (!running(root.getAttribute('data-job-state'))) return;

    async function poll() {
      let job = null;
      try {
        const response = await fetch(url, {
          headers: { accept: 'application/json' },
          credentials: 'same-origin',
        });
        if (response.ok) job = (await response.json()).job;
      } catch {
        job = null;
      }
      if (!job) {
        delay = Math.min(delay * 2, 15_000); // the edge restarted or the network dropped: back off
        setTimeout(poll, delay);
        return;
      }
      delay = JOB_POLL_MS;
      const moved = job.processedEmails !== processed;
      processed = job.processedEmails;
      update(job);
      if (running(job.status)) {
        if (moved || Date.now() - liveAt > LIVE_REFRESH_MS) await showLive(false);
        setTimeout(poll, delay);
      }
      // The server's page explains a failure (reason, refund): show it.
      else if (job.status === 'failed') window.location.reload();
      else await showLive(true);
    }

    // The rows, the pending addresses and (once the job has ended) the report are drawn by the
    // server: take them from a fresh copy of this page, so that the document stays the one the
    // person is reading. Not while they are typing in it (the results filter).
    async function showLive(final) {
      const current = root.querySelector('[data-job-live]');
      if (!final && current && current.contains(document.activeElement)) return;
      liveAt = Date.now();
      try {
        const response = await fetch(window.location.href, {
          headers: { accept: 'text/html' },
          credentials: 'same-origin',
        });
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        const fresh = new DOMParser()
          .parseFromString(await response.text(), 'text/html')
          .querySelector('[data-job-live]');
        if (!fresh || !current) throw new Error('no live section');
        current.replaceWith(document.adoptNode(fresh));
      } catch {
        if (final) window.location.reload();
      }
    }

    function update(job) {
      for (const field of root.querySelectorAll('[data-job-field]')) {
        const name = field.getAttribute('data-job-field');
        if (name === 'status') {
          const badge = element('span', { class: `badge badge-${job.status}` }, [job.status]);
          field.replaceChildren(badge);
        } else if (name in job) {
          field.textContent = String(job[name]);
        }
      }
      const progress = root.querySelector('[data-job-progress]');
      if (progress) {
        progress.value = job.progress;
        progress.textContent = `${job.progress}%`;
      }
      root.setAttribute('data-job-state', job.status);
    }

    setTimeout(poll, JOB_POLL_MS);
  }

  enhanceCopyButtons();
  enhanceBusyForms();
  for (const form of document.querySelectorAll('form[data-bulk-preview]')) enhanceBulkForm(form);
  for (const root of document.querySelectorAll('[data-job-status-url]')) enhanceJobPage(root);
})();

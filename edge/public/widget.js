// rcpt form widget (docs/widget.md): checks the email fields of a page with a publishable key
// when the visitor leaves them, suggests the likely address for a typo, and says when an
// address cannot receive mail or is disposable. It never stands in the way of a form rcpt
// cannot answer for in time, uses no third-party code, inserts no markup or styles as strings
// (a strict Content-Security-Policy and Trusted Types need no exception for it), and speaks
// through a polite live region next to the field.
//
//   <script src="https://rcpt.example/widget.js" data-rcpt-key="rk_pub_…" defer></script>
//
// Attributes of the script element (all optional but the key):
//   data-rcpt-key            the publishable key
//   data-rcpt-fields         CSS selector of the fields to check (default: input[type=email])
//   data-rcpt-typo           "off": no "did you mean …?"
//   data-rcpt-undeliverable  "off": say nothing about addresses that cannot receive mail
//   data-rcpt-disposable     "off": say nothing about disposable addresses
//   data-rcpt-block          "on": an undeliverable or disposable address also makes the field
//                            invalid (the browser's own validation stops the submit); nothing
//                            else ever does, and a check that fails or times out never does
//   data-rcpt-timeout        milliseconds to wait for rcpt (default 2500)
//   data-rcpt-turnstile      "on": send the token of the form's Turnstile widget with each check
//   data-rcpt-msg-typo, data-rcpt-msg-undeliverable, data-rcpt-msg-disposable: the messages
// A field with data-rcpt="off" is left alone.

(() => {
  const script = document.currentScript;
  if (!script) return;
  const setting = (name, fallback) => script.getAttribute(`data-rcpt-${name}`) ?? fallback;
  const key = setting('key', '');
  if (!key) return;
  const endpoint = new URL('/api/v1/verify', script.src).href;
  const timeoutMs = Number(setting('timeout', '2500')) || 2500;
  const on = (name, fallback) => setting(name, fallback) !== 'off';
  const behaviour = {
    typo: on('typo', 'on'),
    undeliverable: on('undeliverable', 'on'),
    disposable: on('disposable', 'on'),
    block: setting('block', 'off') === 'on',
    turnstile: setting('turnstile', 'off') === 'on',
  };
  const messages = {
    typo: setting('msg-typo', 'Did you mean'),
    undeliverable: setting('msg-undeliverable', 'This address cannot receive email. Please check it.'),
    disposable: setting(
      'msg-disposable',
      'This looks like a disposable address. Please use one you will keep.',
    ),
    applied: 'Address changed to',
  };
  let counter = 0;

  /** What to say about the answer for `email`, or null for nothing. */
  function verdictOf(email, data) {
    // checks.hasTypo suggests a domain: the visitor's local part stays as typed.
    const domain = data.checks?.hasTypo?.suggested;
    const suggested =
      typeof domain === 'string' ? `${email.slice(0, email.lastIndexOf('@'))}@${domain}` : email;
    if (behaviour.typo && suggested !== email) return { kind: 'typo', suggested };
    if (behaviour.disposable && data.checks?.isDisposable === true) return { kind: 'disposable' };
    if (behaviour.undeliverable && data.status === 'undeliverable') return { kind: 'undeliverable' };
    return null;
  }

  function turnstileToken(field) {
    const input = field.form?.querySelector('[name="cf-turnstile-response"]');
    return input ? input.value : '';
  }

  /** The verdict for `email`, or null when rcpt does not answer in time or refuses. */
  async function check(field, email) {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    const headers = { 'content-type': 'application/json', 'x-api-key': key };
    if (behaviour.turnstile) headers['x-turnstile-token'] = turnstileToken(field);
    try {
      const response = await fetch(endpoint, {
        method: 'POST',
        headers,
        body: JSON.stringify({ email }),
        signal: controller.signal,
        credentials: 'omit',
      });
      if (!response.ok) return null;
      const body = await response.json();
      return body && body.success === true ? body.data : null;
    } catch {
      return null;
    } finally {
      clearTimeout(timer);
      // A Turnstile token is good once: ask the page's widget for the next one.
      if (behaviour.turnstile && window.turnstile) window.turnstile.reset();
    }
  }

  function attach(field) {
    if (field.getAttribute('data-rcpt') === 'off' || field.rcptAttached) return;
    field.rcptAttached = true;
    const region = document.createElement('div');
    region.id = `rcpt-message-${++counter}`;
    region.className = 'rcpt-message';
    region.setAttribute('aria-live', 'polite');
    region.setAttribute('data-rcpt-message', '');
    field.after(region);
    const describedBy = field.getAttribute('aria-describedby');
    field.setAttribute('aria-describedby', describedBy ? `${describedBy} ${region.id}` : region.id);
    let checked = '';
    let pending = 0;

    function say(kind, ...parts) {
      region.replaceChildren(...parts);
      region.setAttribute('data-rcpt-state', kind);
      const problem = kind === 'undeliverable' || kind === 'disposable';
      if (problem) field.setAttribute('aria-invalid', 'true');
      else field.removeAttribute('aria-invalid');
      if (behaviour.block) field.setCustomValidity(problem ? region.textContent : '');
    }

    function clear() {
      say('none');
    }

    function suggest(suggested) {
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'rcpt-suggestion';
      button.textContent = suggested;
      button.addEventListener('click', () => {
        field.value = suggested;
        checked = suggested;
        field.dispatchEvent(new Event('input', { bubbles: true }));
        field.dispatchEvent(new Event('change', { bubbles: true }));
        say('applied', `${messages.applied} ${suggested}.`);
        field.focus();
      });
      say('typo', `${messages.typo} `, button, '?');
    }

    field.addEventListener('input', () => {
      if (region.getAttribute('data-rcpt-state') !== 'none') clear();
    });
    field.addEventListener('blur', async () => {
      const email = field.value.trim();
      if (email === checked) return;
      checked = email;
      if (!email.includes('@')) {
        clear();
        return;
      }
      const ticket = ++pending;
      const data = await check(field, email);
      // The visitor changed the address meanwhile: this answer is about another one.
      if (ticket !== pending || field.value.trim() !== email) return;
      const verdict = data && verdictOf(email, data);
      if (!verdict) clear();
      else if (verdict.kind === 'typo') suggest(verdict.suggested);
      else say(verdict.kind, messages[verdict.kind]);
    });
  }

  function start() {
    for (const field of document.querySelectorAll(setting('fields', 'input[type=email]'))) attach(field);
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();

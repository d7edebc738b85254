// The deploy check's rules (`npm run admin -- check`, docs/operations.md "Deploying the edge"):
// the production set-up, item by item, against what a deployment declares. Pure, and free of
// Worker types, so the operator script runs it in Node; config.ts parses the same settings in
// the Worker.

/**
 * What a deployment declares, as the deploy check (`npm run admin -- check`) reads it from the
 * wrangler configuration and, when asked, from Cloudflare: its vars, the names of its secrets
 * (null: not asked, so not checked), and the names of its `send_email` bindings.
 */
export interface DeploymentSettings {
  vars: Readonly<Record<string, unknown>>;
  secretNames: readonly string[] | null;
  sendEmailBindings: readonly string[];
}

/** One line of the deploy check: `missing` fails it, `unchecked` is said but does not. */
export interface DeploymentFinding {
  setting: string;
  state: 'ok' | 'missing' | 'unchecked';
  message: string;
}

/**
 * The production set-up of docs/operations.md ("Deploying the edge", "Sign-up: confirmation
 * emails"), item by item, against what a deployment declares.
 */
export function checkProductionSettings(settings: DeploymentSettings): DeploymentFinding[] {
  const text = (name: string) => {
    const value = settings.vars[name];
    return typeof value === 'string' && value !== '' ? value : undefined;
  };
  const secret = (name: string, why: string): DeploymentFinding => {
    if (settings.secretNames === null)
      return {
        setting: name,
        state: 'unchecked',
        message: `the ${name} secret was not looked up (run the check with --remote): ${why}`,
      };
    return settings.secretNames.includes(name)
      ? { setting: name, state: 'ok', message: `the ${name} secret is set` }
      : {
          setting: name,
          state: 'missing',
          message: `the ${name} secret is not set (wrangler secret put ${name}): ${why}`,
        };
  };
  const findings: DeploymentFinding[] = [
    secret(
      'SECRETS_KEY',
      'it seals webhook secrets and signs confirmation links; sign-up answers 503 without it',
    ),
  ];

  const sender = text('EMAIL_SENDER') ?? 'cloudflare';
  findings.push(
    sender === 'cloudflare'
      ? {
          setting: 'EMAIL_SENDER',
          state: 'ok',
          message: 'confirmation emails go through Cloudflare Email Service',
        }
      : {
          setting: 'EMAIL_SENDER',
          state: 'missing',
          message: `EMAIL_SENDER is "${sender}": confirmation emails are not sent (set it to "cloudflare" or remove it)`,
        },
  );
  if (sender === 'cloudflare') {
    findings.push(
      settings.sendEmailBindings.includes('EMAIL')
        ? { setting: 'EMAIL', state: 'ok', message: 'the send_email binding EMAIL is declared' }
        : {
            setting: 'EMAIL',
            state: 'missing',
            message: 'no send_email binding named EMAIL: sign-up answers 503 and creates nothing',
          },
      text('EMAIL_FROM')
        ? {
            setting: 'EMAIL_FROM',
            state: 'ok',
            message: `confirmation emails come from ${text('EMAIL_FROM')}`,
          }
        : {
            setting: 'EMAIL_FROM',
            state: 'missing',
            message: 'EMAIL_FROM is not set: sign-up answers 503 and creates nothing',
          },
    );
  }

  // Turnstile is off when its site key is unset: fine for development, not for a deployment,
  // whose sign-up form would then take any script's posts.
  const turnstileWhy = 'without Turnstile the sign-up form has no check that a person is filling it in';
  findings.push(
    text('TURNSTILE_SITE_KEY')
      ? { setting: 'TURNSTILE_SITE_KEY', state: 'ok', message: 'Turnstile is on for sign-up' }
      : {
          setting: 'TURNSTILE_SITE_KEY',
          state: 'missing',
          message: `Turnstile is not configured (TURNSTILE_SITE_KEY is not set): ${turnstileWhy}`,
        },
    secret('TURNSTILE_SECRET_KEY', `Siteverify needs it; ${turnstileWhy}`),
  );

  const allowPrivate = text('ALLOW_PRIVATE_TARGETS');
  findings.push(
    allowPrivate === 'true' || allowPrivate === '1'
      ? {
          setting: 'ALLOW_PRIVATE_TARGETS',
          state: 'missing',
          message:
            'ALLOW_PRIVATE_TARGETS is on: webhooks and probes may reach private addresses (tests only)',
        }
      : { setting: 'ALLOW_PRIVATE_TARGETS', state: 'ok', message: 'private targets are refused' },
  );
  return findings;
}
